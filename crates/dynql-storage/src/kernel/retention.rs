//! Compaction with version retention (seed 003, "Deleting old data").
//!
//! A value may be dropped when nothing prohibits it and something permits it. The values of
//! a row's column (and the tombstones, which delete every column) are ordered newest first:
//! the first `min_data_versions` and those younger than `min_data_ttl` are protected; those
//! after the first `max_data_versions` or older than `max_data_ttl` may go. Dropped values
//! fold into the oldest kept one (aggregates summed into it); a column whose value at some
//! time is gone reads null there; a row whose values all go, or that ends in a tombstone with
//! nothing left to hide, disappears.
//!
//! The rules apply per value, as YT's do ([`compact_versions`]); a minor compaction, which
//! sees only part of a row's history, applies them to whole versions and drops only what no
//! kept version needs ([`compact_recent_versions`]).
//!
//! Compaction is a logged action carrying its "now", so every replica of the log prunes the
//! same versions.

use serde::{Deserialize, Serialize};

use dynql_core::{TableSchema, Value};

use crate::kernel::mvcc::{resolve_versions, RowDelta, WriteKind};
use crate::kernel::timestamp::Timestamp;

/// Retention settings of a table (YT attributes; times in milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retention {
    pub min_data_versions: u64,
    pub max_data_versions: u64,
    pub min_data_ttl: u64,
    pub max_data_ttl: u64,
}

impl Default for Retention {
    /// YT's defaults: one version, plus everything of the last 30 minutes.
    fn default() -> Retention {
        Retention {
            min_data_versions: 1,
            max_data_versions: 1,
            min_data_ttl: 1_800_000,
            max_data_ttl: 1_800_000,
        }
    }
}

impl Retention {
    /// Checks the `$ttl` (milliseconds) a written row gives its version: YT refuses one below
    /// the table's `min_data_ttl`. Every write path (insert, import) applies this one rule.
    ///
    /// ```
    /// use dynql_storage::Retention;
    /// let r = Retention { min_data_ttl: 1000, ..Retention::default() };
    /// assert!(r.check_row_ttl(1000).is_ok());
    /// assert_eq!(
    ///     r.check_row_ttl(999).unwrap_err(),
    ///     "$ttl 999 is below the table's min_data_ttl 1000"
    /// );
    /// ```
    pub fn check_row_ttl(&self, ttl: u64) -> std::result::Result<(), String> {
        if ttl < self.min_data_ttl {
            return Err(format!(
                "$ttl {ttl} is below the table's min_data_ttl {}",
                self.min_data_ttl
            ));
        }
        Ok(())
    }
}

/// Milliseconds since the epoch of a timestamp.
pub fn timestamp_ms(t: Timestamp) -> u64 {
    t.unix_seconds() * 1000
        + (t.0 & ((1 << crate::kernel::timestamp::COUNTER_BITS) - 1)) / 1_000_000
}

/// The versions of one row (commit order) after compaction at `now`, retention applied per
/// value as the seed says: each column's values (a write of the column, or a tombstone,
/// which deletes every column) are ranked newest first and kept or dropped on their own;
/// the row's existence (every version) is ranked the same way. What is kept is always each
/// column's newest values. The oldest kept version becomes an overwrite of the row as
/// resolved there, aggregates folded, with the columns whose value there was dropped null;
/// later versions lose their dropped values. So a read at a time where a column's value is
/// kept is unchanged, and a column whose value at that time is gone reads null (YT's
/// behaviour for time-travel reads of rows written in update mode); reads at "now" never
/// change while the newest values are kept.
///
/// Versions committed after `horizon` (the oldest start of a live transaction) are kept
/// exactly as written, whatever retention says, and nothing is folded into them: a live
/// transaction's conflict check looks for versions committed after its start, including
/// tombstones, and compaction must not destroy that evidence (YT likewise keeps what running
/// transactions can see). Pass [`Timestamp::MAX`] when no transaction can be live.
pub fn compact_versions(
    schema: &TableSchema,
    retention: &Retention,
    deltas: &[RowDelta],
    now: Timestamp,
    horizon: Timestamp,
) -> Vec<RowDelta> {
    let deltas = &*crate::kernel::mvcc::in_commit_order(deltas);
    let retention = row_retention(schema, retention, deltas).0;
    // The oldest kept entry of a sequence; a fold into one committed after the horizon (which
    // must stay as written) goes into the entry before it.
    let oldest = |writes: &dyn Fn(&RowDelta) -> bool| {
        let o = oldest_kept(&retention, deltas, writes, now, horizon)?;
        Some(match deltas[o].timestamp > horizon {
            true => deltas[..o].iter().rposition(writes).unwrap_or(o),
            false => o,
        })
    };
    let Some(row_oldest) = oldest(&|_| true) else {
        return Vec::new();
    };
    let key_count = schema.key_column_count();
    // Per column: the version of its oldest kept value (`None`: all dropped, or a key).
    let first: Vec<Option<usize>> = (0..schema.columns().len())
        .map(|c| {
            if c < key_count {
                return None;
            }
            oldest(&|d| writes_column(schema, d, c))
        })
        .collect();
    let f = first.iter().flatten().fold(row_oldest, |a, &b| a.min(b));
    let kept_at = |c: usize, i: usize| first[c].is_some_and(|o| o <= i);
    let base = &deltas[f];
    let mut out = Vec::with_capacity(deltas.len() - f);
    let whole = (key_count..schema.columns().len())
        .all(|c| !writes_column(schema, base, c) || first[c] == Some(f));
    if base.timestamp > horizon || (f == 0 && whole) {
        out.push(base.clone());
    } else {
        match resolve_versions(schema, &deltas[..=f], base.timestamp) {
            Some(row) => out.push(RowDelta {
                timestamp: base.timestamp,
                kind: WriteKind::Overwrite,
                values: row
                    .into_iter()
                    .enumerate()
                    .map(|(c, v)| {
                        Some(if c < key_count || kept_at(c, f) {
                            v
                        } else {
                            Value::Null
                        })
                    })
                    .collect(),
                aggregate: false,
            }),
            None => out.push(RowDelta {
                kind: WriteKind::Delete,
                aggregate: false,
                ..base.clone()
            }),
        }
    }
    for (i, d) in deltas.iter().enumerate().skip(f + 1) {
        if d.kind == WriteKind::Delete || d.timestamp > horizon {
            out.push(d.clone());
            continue;
        }
        let mut kept = d.clone();
        let mut folded = Vec::new();
        for c in key_count..schema.columns().len() {
            if !writes_column(schema, d, c) || first[c].is_some_and(|o| o < i) {
                continue;
            }
            if first[c] == Some(i) {
                // The oldest kept value of an aggregate column takes the deltas before it.
                if d.aggregate && schema.columns()[c].aggregate.is_some() {
                    let row = resolve_versions(schema, &deltas[..=i], d.timestamp);
                    folded.push((c, row.map_or(Value::Null, |r| r[c].clone())));
                    kept.values[c] = None;
                }
            } else {
                // Dropped: the column reads null here, as it does at every older time.
                kept.values[c] = None;
            }
        }
        let any_kept = (key_count..schema.columns().len())
            .any(|c| writes_column(schema, d, c) && kept_at(c, i));
        let exists = out.last().is_some_and(|d| d.kind != WriteKind::Delete);
        if !any_kept && i < row_oldest && exists {
            // Every value it wrote is gone, and so is its place in the row's history.
            continue;
        }
        if !folded.is_empty() {
            let mut values: Vec<Option<Value>> = d.values[..key_count].to_vec();
            values.resize(schema.columns().len(), None);
            for (c, v) in folded {
                values[c] = Some(v);
            }
            out.push(RowDelta {
                timestamp: d.timestamp,
                kind: WriteKind::Update,
                values,
                aggregate: false,
            });
        }
        out.push(kept);
    }
    // A leading tombstone hides nothing (but one after the horizon is conflict evidence).
    while out
        .first()
        .is_some_and(|d| d.kind == WriteKind::Delete && d.timestamp <= horizon)
    {
        out.remove(0);
    }
    out
}

/// Whether a version gives column `c` a value (a tombstone deletes every column; an overwrite
/// sets the columns it leaves out to null, but for aggregate columns of an aggregate write).
fn writes_column(schema: &TableSchema, d: &RowDelta, c: usize) -> bool {
    match d.kind {
        WriteKind::Delete => true,
        WriteKind::Update => d.values.get(c).is_some_and(Option::is_some),
        WriteKind::Overwrite => {
            d.values.get(c).is_some_and(Option::is_some)
                || !(d.aggregate && schema.columns()[c].aggregate.is_some())
        }
    }
}

/// A row's retention: the table's, or with the row's `$ttl` (the newest value written) in
/// place of both time limits (seed 003), and whether that `$ttl` was found.
fn row_retention(
    schema: &TableSchema,
    retention: &Retention,
    deltas: &[RowDelta],
) -> (Retention, bool) {
    let row_ttl = schema
        .column_index(dynql_core::schema::TTL_COLUMN)
        .and_then(|i| {
            deltas.iter().rev().find_map(|d| match d.values.get(i) {
                Some(Some(dynql_core::Value::Uint64(t))) => Some(*t),
                _ => None,
            })
        });
    match row_ttl {
        Some(t) => (
            Retention {
                min_data_ttl: t,
                max_data_ttl: t,
                ..*retention
            },
            true,
        ),
        None => (*retention, false),
    }
}

/// The oldest entry retention keeps at `now` of the sequence of versions (commit order) that
/// `writes` picks, ranked newest first: protected are the first `min_data_versions`, those
/// younger than `min_data_ttl` and those after `horizon`; permitted to go are those after the
/// first `max_data_versions` or older than `max_data_ttl`. Kept entries are always a run of
/// the newest, so the oldest one says which.
fn oldest_kept(
    retention: &Retention,
    deltas: &[RowDelta],
    writes: &dyn Fn(&RowDelta) -> bool,
    now: Timestamp,
    horizon: Timestamp,
) -> Option<usize> {
    let now_ms = timestamp_ms(now);
    let mut oldest = None;
    for (rank, (i, d)) in deltas
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, d)| writes(d))
        .enumerate()
    {
        let rank = rank as u64; // 0 = newest
        let age = now_ms.saturating_sub(timestamp_ms(d.timestamp));
        let protected = rank < retention.min_data_versions
            || age < retention.min_data_ttl
            || d.timestamp > horizon;
        let permitted = rank >= retention.max_data_versions || age > retention.max_data_ttl;
        if protected || !permitted {
            oldest = Some(i);
        }
    }
    oldest
}

/// [`compact_versions`] for the *recent part* of a row's history: the versions held by the
/// newest chunks of a table, while older versions of the row may remain in older chunks
/// (a minor compaction, [`crate::kernel::compaction_policy`]).
///
/// Retention is applied the same way, but nothing may be folded (an update or an aggregate
/// delta may build on a version out of sight), so versions go only below a version that
/// determines the row on its own (an overwrite that is not an aggregate delta, or a
/// tombstone); tombstones stay, since they hide older chunks; and a row whose versions all
/// expire becomes one tombstone. Without a `$ttl` value in sight, a table with a `$ttl`
/// column keeps every version (the row's `$ttl` may be in an older chunk).
pub fn compact_recent_versions(
    schema: &TableSchema,
    retention: &Retention,
    deltas: &[RowDelta],
    now: Timestamp,
    horizon: Timestamp,
) -> Vec<RowDelta> {
    let deltas = &*crate::kernel::mvcc::in_commit_order(deltas);
    let (retention, ttl_known) = row_retention(schema, retention, deltas);
    let ttl_column = schema
        .column_index(dynql_core::schema::TTL_COLUMN)
        .is_some();
    if deltas.is_empty() || (ttl_column && !ttl_known) {
        return deltas.to_vec();
    }
    let Some(oldest_kept) = oldest_kept(&retention, deltas, &|_| true, now, horizon) else {
        // Every version expired (so none is after the horizon): the row goes, and a
        // tombstone keeps older chunks from showing through.
        let newest = &deltas[deltas.len() - 1];
        return vec![RowDelta {
            timestamp: newest.timestamp,
            kind: WriteKind::Delete,
            values: newest.values.clone(),
            aggregate: false,
        }];
    };
    let whole = |d: &RowDelta| {
        d.kind == WriteKind::Delete || (d.kind == WriteKind::Overwrite && !d.aggregate)
    };
    // The newest version at or below the oldest kept one that needs nothing older.
    match deltas[..=oldest_kept].iter().rposition(whole) {
        Some(first) => deltas[first..].to_vec(),
        None => deltas.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dynql_core::Value;

    fn schema() -> TableSchema {
        TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=int64};{name=s;type=int64;aggregate=sum}]").unwrap()
    }

    const MIN: u64 = 60_000;

    fn at_minute(m: u64) -> Timestamp {
        Timestamp::from_unix_seconds(1_700_000_000 + m * 60)
    }

    fn d(m: u64, kind: WriteKind, v: Option<i64>, s: Option<i64>, aggregate: bool) -> RowDelta {
        RowDelta {
            timestamp: at_minute(m),
            kind,
            values: vec![
                Some(Value::Int64(1)),
                v.map(Value::Int64),
                s.map(Value::Int64),
            ],
            aggregate,
        }
    }

    #[test]
    fn defaults_keep_the_last_version_and_the_last_30_minutes() {
        let s = schema();
        let versions = vec![
            d(0, WriteKind::Overwrite, Some(1), Some(1), false),
            d(10, WriteKind::Update, Some(2), None, false),
            d(100, WriteKind::Update, None, Some(5), true),
            d(110, WriteKind::Update, Some(3), None, false),
        ];
        let now = at_minute(120);
        let out = compact_versions(&s, &Retention::default(), &versions, now, Timestamp::MAX);
        // Minute 100 and 110 are within 30 minutes; the older two fold into minute 100.
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].kind, WriteKind::Overwrite);
        for t in [at_minute(110), now] {
            assert_eq!(
                resolve_versions(&s, &out, t),
                resolve_versions(&s, &versions, t),
                "at {t}"
            );
        }
        assert_eq!(resolve_versions(&s, &out, now).unwrap()[2], Value::Int64(6));
        // At minute 100, v's value (of minute 10) is gone: retention is per value.
        assert_eq!(
            resolve_versions(&s, &out, at_minute(100)),
            Some(vec![Value::Int64(1), Value::Null, Value::Int64(6)])
        );
    }

    #[test]
    fn retention_is_per_value() {
        let s = schema();
        let one = Retention {
            min_data_versions: 1,
            max_data_versions: 1,
            min_data_ttl: 0,
            max_data_ttl: 0,
        };
        // s is written once, v three times: s keeps its only value, v its newest.
        let versions = vec![
            d(0, WriteKind::Overwrite, Some(1), Some(1), false),
            d(10, WriteKind::Update, Some(2), None, false),
            d(20, WriteKind::Update, Some(3), None, false),
        ];
        let out = compact_versions(&s, &one, &versions, at_minute(30), Timestamp::MAX);
        assert_eq!(out.len(), 2, "{out:?}");
        let row = |v: Value| Some(vec![Value::Int64(1), v, Value::Int64(1)]);
        assert_eq!(resolve_versions(&s, &out, at_minute(0)), row(Value::Null));
        assert_eq!(resolve_versions(&s, &out, at_minute(10)), row(Value::Null));
        assert_eq!(
            resolve_versions(&s, &out, at_minute(20)),
            row(Value::Int64(3))
        );
        // Aggregate deltas older than the kept ones fold into the oldest kept.
        let deltas = vec![
            d(0, WriteKind::Overwrite, Some(1), Some(1), false),
            d(10, WriteKind::Update, None, Some(2), true),
            d(20, WriteKind::Update, Some(5), None, false),
            d(25, WriteKind::Update, None, Some(4), true),
        ];
        let two = Retention {
            max_data_versions: 2,
            max_data_ttl: u64::MAX,
            ..one
        };
        let out = compact_versions(&s, &two, &deltas, at_minute(30), Timestamp::MAX);
        assert_eq!(
            resolve_versions(&s, &out, at_minute(30)),
            resolve_versions(&s, &deltas, at_minute(30))
        );
        // s keeps minutes 10 and 25 (3 at minute 10, folded), v minutes 0 and 20.
        assert_eq!(
            resolve_versions(&s, &out, at_minute(10)),
            Some(vec![Value::Int64(1), Value::Int64(1), Value::Int64(3)])
        );
    }

    #[test]
    fn old_rows_can_go_entirely_and_tombstones_are_dropped() {
        let s = schema();
        let one_day = Retention {
            min_data_versions: 0,
            max_data_versions: 1,
            min_data_ttl: 0,
            max_data_ttl: 1440 * MIN,
        };
        let versions = vec![d(0, WriteKind::Overwrite, Some(1), None, false)];
        assert!(
            compact_versions(&s, &one_day, &versions, at_minute(2000), Timestamp::MAX).is_empty()
        );
        assert_eq!(
            compact_versions(&s, &one_day, &versions, at_minute(10), Timestamp::MAX).len(),
            1
        );
        let deleted = vec![
            d(0, WriteKind::Overwrite, Some(1), None, false),
            d(5, WriteKind::Delete, None, None, false),
        ];
        assert!(compact_versions(
            &s,
            &Retention {
                min_data_ttl: 0,
                max_data_ttl: 0,
                ..Retention::default()
            },
            &deleted,
            at_minute(6),
            Timestamp::MAX
        )
        .is_empty());
    }

    #[test]
    fn versions_after_the_horizon_are_conflict_evidence_and_stay_as_written() {
        let s = schema();
        let no_ttl = Retention {
            min_data_ttl: 0,
            max_data_ttl: 0,
            ..Retention::default()
        };
        let history = vec![
            d(0, WriteKind::Overwrite, Some(1), None, false),
            d(5, WriteKind::Update, Some(2), None, false),
            d(6, WriteKind::Delete, None, None, false),
        ];
        // Without a live transaction the row is gone entirely...
        assert!(compact_versions(&s, &no_ttl, &history, at_minute(7), Timestamp::MAX).is_empty());
        // ...but a transaction that started at minute 4 must still see the update and the
        // delete committed after it: they stay verbatim (the update is not folded into an
        // overwrite), and the version before them carries the folded past.
        let out = compact_versions(&s, &no_ttl, &history, at_minute(7), at_minute(4));
        assert_eq!(out.len(), 3, "{out:?}");
        assert_eq!(&out[1..], &history[1..]);
        // A transaction that started at minute 5: only the tombstone is evidence; it is kept
        // although it leads nothing to hide, and the folded past stays under it.
        let out = compact_versions(&s, &no_ttl, &history, at_minute(7), at_minute(5));
        assert_eq!(out.last(), history.last());
        for t in [at_minute(6), at_minute(7)] {
            assert_eq!(
                resolve_versions(&s, &out, t),
                resolve_versions(&s, &history, t)
            );
        }
    }

    #[test]
    fn row_ttl_replaces_the_time_limits() {
        let s = TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=int64};{name=\"$ttl\";type=uint64}]").unwrap();
        let row = |m: u64, ttl_minutes: u64| RowDelta {
            timestamp: at_minute(m),
            kind: WriteKind::Overwrite,
            values: vec![
                Some(Value::Int64(1)),
                Some(Value::Int64(m as i64)),
                Some(Value::Uint64(ttl_minutes * MIN)),
            ],
            aggregate: false,
        };
        let expiring = Retention {
            min_data_versions: 0,
            ..Retention::default()
        };
        // A 10-minute row is gone after 10 minutes even though max_data_ttl is 30 minutes...
        assert!(
            compact_versions(&s, &expiring, &[row(0, 10)], at_minute(11), Timestamp::MAX)
                .is_empty()
        );
        assert_eq!(
            compact_versions(&s, &expiring, &[row(0, 10)], at_minute(9), Timestamp::MAX).len(),
            1
        );
        // ...and a 2-hour row outlives max_data_ttl.
        assert_eq!(
            compact_versions(&s, &expiring, &[row(0, 120)], at_minute(60), Timestamp::MAX).len(),
            1
        );
        // min_data_versions > 0 keeps the last version whatever $ttl says.
        assert_eq!(
            compact_versions(
                &s,
                &Retention::default(),
                &[row(0, 10)],
                at_minute(500),
                Timestamp::MAX
            )
            .len(),
            1
        );
    }

    #[test]
    fn max_versions_bounds_history() {
        let s = schema();
        let r = Retention {
            min_data_versions: 1,
            max_data_versions: 2,
            min_data_ttl: 0,
            max_data_ttl: u64::MAX,
        };
        let versions: Vec<_> = (0..5)
            .map(|m| d(m, WriteKind::Update, Some(m as i64), None, false))
            .collect();
        let out = compact_versions(&s, &r, &versions, at_minute(10), Timestamp::MAX);
        assert_eq!(out.len(), 2);
        assert_eq!(
            resolve_versions(&s, &out, at_minute(10)),
            resolve_versions(&s, &versions, at_minute(10))
        );
    }

    /// A row's history from generated writes (kind, value, aggregate value, aggregate delta)
    /// `gaps` minutes apart, and a "now" five minutes after the last.
    fn history(
        ops: &[(u8, Option<i64>, Option<i64>, bool)],
        gaps: &[u64],
    ) -> (Vec<RowDelta>, Timestamp) {
        let mut minute = 0;
        let versions = ops
            .iter()
            .enumerate()
            .map(|(i, (kind, v, agg, aggregate))| {
                minute += gaps[i];
                let kind = match kind {
                    0 => WriteKind::Overwrite,
                    1 => WriteKind::Update,
                    _ => WriteKind::Delete,
                };
                d(minute, kind, *v, *agg, *aggregate)
            })
            .collect();
        (versions, at_minute(minute + 5))
    }

    proptest::proptest! {
        /// Compaction never changes a read at "now"; at any time it returns each column's
        /// value or null, never another value, and the row exists exactly when it did; a
        /// column whose value the per-value rules keep reads it unchanged; and once a
        /// column reads its value again it does so at every later time.
        #[test]
        fn compaction_keeps_reads_of_kept_values(
            ops in proptest::collection::vec((0u8..3, proptest::option::of(0i64..4), proptest::option::of(0i64..4), proptest::bool::ANY), 1..10),
            gaps in proptest::collection::vec(0u64..40, 10),
            min_versions in 0u64..2,
            max_versions in 1u64..4,
            ttl_minutes in 0u64..60,
            horizon_at in proptest::option::of(0usize..10),
        ) {
            let s = schema();
            let (versions, now) = history(&ops, &gaps);
            let r = Retention { min_data_versions: min_versions, max_data_versions: max_versions, min_data_ttl: ttl_minutes * MIN / 2, max_data_ttl: ttl_minutes * MIN };
            let horizon = horizon_at.map_or(Timestamp::MAX, |i| versions[i % versions.len()].timestamp);
            let out = compact_versions(&s, &r, &versions, now, horizon);
            if min_versions > 0 {
                proptest::prop_assert_eq!(resolve_versions(&s, &out, now), resolve_versions(&s, &versions, now));
            }
            // Every version after the horizon survives as written, in order.
            let after: Vec<&RowDelta> = versions.iter().filter(|v| v.timestamp > horizon).collect();
            let kept_after: Vec<&RowDelta> = out.iter().filter(|v| v.timestamp > horizon).collect();
            proptest::prop_assert_eq!(after, kept_after);
            proptest::prop_assert!(out.len() <= versions.len() + 2);
            let Some(first) = out.first().map(|d| d.timestamp) else { return Ok(()) };
            let mut times: Vec<Timestamp> = versions.iter().map(|v| v.timestamp).filter(|t| *t >= first).collect();
            times.push(now);
            let mut restored = [false; 3];
            for t in times {
                let (o, v) = (resolve_versions(&s, &out, t), resolve_versions(&s, &versions, t));
                proptest::prop_assert_eq!(o.is_some(), v.is_some(), "existence at {}", t);
                let (Some(o), Some(v)) = (o, v) else { continue };
                for c in 1..3 {
                    proptest::prop_assert!(o[c] == v[c] || o[c] == Value::Null, "column {} at {}: {:?} vs {:?}", c, t, o, v);
                    if restored[c] {
                        proptest::prop_assert_eq!(&o[c], &v[c], "column {} at {} after it was restored", c, t);
                    }
                    restored[c] |= o[c] == v[c] && v[c] != Value::Null;
                }
            }
            // The model: per column, the values the rules keep read unchanged at their time.
            let now_ms = timestamp_ms(now);
            for c in 1..3 {
                let writers: Vec<&RowDelta> = versions.iter().rev().filter(|d| writes_column(&s, d, c)).collect();
                for (rank, d) in writers.iter().enumerate() {
                    let rank = rank as u64;
                    let age = now_ms.saturating_sub(timestamp_ms(d.timestamp));
                    let kept = rank < r.min_data_versions || age < r.min_data_ttl || d.timestamp > horizon
                        || (rank < r.max_data_versions && age <= r.max_data_ttl);
                    if kept {
                        let o = resolve_versions(&s, &out, d.timestamp);
                        let v = resolve_versions(&s, &versions, d.timestamp);
                        proptest::prop_assert_eq!(o.map(|r| r[c].clone()), v.map(|r| r[c].clone()), "kept column {} at {}", c, d.timestamp);
                    }
                }
            }
        }

        /// Compacting only the recent part of a history (older versions elsewhere) never
        /// changes a read at "now" or at a kept version's timestamp, whatever the older part
        /// holds; a row it removes is one full compaction removes too.
        #[test]
        fn recent_compaction_keeps_reads_whatever_lies_below(
            ops in proptest::collection::vec((0u8..3, proptest::option::of(0i64..4), proptest::option::of(0i64..4), proptest::bool::ANY), 1..10),
            gaps in proptest::collection::vec(0u64..40, 10),
            split in 0usize..10,
            min_versions in 0u64..2,
            max_versions in 1u64..4,
            ttl_minutes in 0u64..60,
            horizon_at in proptest::option::of(0usize..10),
        ) {
            let s = schema();
            let (versions, now) = history(&ops, &gaps);
            let r = Retention { min_data_versions: min_versions, max_data_versions: max_versions, min_data_ttl: ttl_minutes * MIN / 2, max_data_ttl: ttl_minutes * MIN };
            let horizon = horizon_at.map_or(Timestamp::MAX, |i| versions[i % versions.len()].timestamp);
            let (older, recent) = versions.split_at(split.min(versions.len()));
            let out = compact_recent_versions(&s, &r, recent, now, horizon);
            let mut together = older.to_vec();
            together.extend(out.iter().cloned());
            if !recent.is_empty() && compact_versions(&s, &r, &versions, now, horizon).is_empty() {
                // The row expired: only reads at "now" are defined by retention.
                proptest::prop_assert_eq!(resolve_versions(&s, &together, now), None);
            } else {
                proptest::prop_assert_eq!(resolve_versions(&s, &together, now), resolve_versions(&s, &versions, now));
                for kept in &out {
                    proptest::prop_assert_eq!(resolve_versions(&s, &together, kept.timestamp), resolve_versions(&s, &versions, kept.timestamp));
                }
            }
            let after: Vec<&RowDelta> = recent.iter().filter(|v| v.timestamp > horizon).collect();
            let kept_after: Vec<&RowDelta> = out.iter().filter(|v| v.timestamp > horizon).collect();
            proptest::prop_assert_eq!(after, kept_after);
            proptest::prop_assert!(out.len() <= recent.len().max(1));
        }
    }
}
