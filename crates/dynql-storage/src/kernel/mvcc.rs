//! Versioned rows: every write is a delta at a commit timestamp; a read at timestamp `t`
//! resolves the deltas with timestamp <= `t` in commit order.
//!
//! Resolution (YT semantics, seed 003): an *overwrite* write replaces the row (unwritten
//! columns null); an *update* write changes only the columns it names (a missing row starts
//! all-null); a *delete* is a tombstone that hides older versions; a write flagged
//! *aggregate* folds each aggregating column's value into the previous one (sum, min, max,
//! first) instead of replacing it. Null deltas do not change an aggregate.

use std::cmp::Ordering;

use dynql_core::{compare_values, TableSchema, Value};
use serde::{Deserialize, Serialize};

use crate::kernel::timestamp::Timestamp;

/// How a write changes a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteKind {
    /// `insert_rows` (overwrite mode): the row replaces the stored row.
    Overwrite,
    /// `insert_rows --update`: only written columns change.
    Update,
    /// `delete_rows`: a tombstone.
    Delete,
}

/// One versioned delta of one row.
#[derive(Debug, Clone, PartialEq)]
pub struct RowDelta {
    pub timestamp: Timestamp,
    pub kind: WriteKind,
    /// Values in schema order (keys included); unwritten columns are `None`.
    pub values: Vec<Option<Value>>,
    /// Aggregating columns fold into the previous value instead of replacing it.
    pub aggregate: bool,
}

/// The deltas of one key in commit order, which is timestamp order: as they are when they
/// already are (the common case, no copy), else sorted by timestamp, stably, so the versions of
/// one commit keep their order. Deltas gathered from several sources may come out of order: a
/// bulk write's chunk is newer than older versions still in the dynamic store.
pub(crate) fn in_commit_order(deltas: &[RowDelta]) -> std::borrow::Cow<'_, [RowDelta]> {
    if deltas.is_sorted_by_key(|d| d.timestamp) {
        return std::borrow::Cow::Borrowed(deltas);
    }
    let mut sorted = deltas.to_vec();
    put_in_commit_order(&mut sorted);
    std::borrow::Cow::Owned(sorted)
}

/// [`in_commit_order`] in place.
pub(crate) fn put_in_commit_order(deltas: &mut [RowDelta]) {
    if !deltas.is_sorted_by_key(|d| d.timestamp) {
        deltas.sort_by_key(|d| d.timestamp);
    }
}

/// Resolves the deltas of one key (in commit order) at `read`; `None` when the row does not
/// exist at that timestamp.
///
/// Deltas out of commit order are put in it first ([`in_commit_order`]).
pub fn resolve_versions(
    schema: &TableSchema,
    deltas: &[RowDelta],
    read: Timestamp,
) -> Option<Vec<Value>> {
    let deltas = in_commit_order(deltas);
    let mut row: Option<Vec<Value>> = None;
    for d in deltas.iter().filter(|d| d.timestamp <= read) {
        match d.kind {
            WriteKind::Delete => row = None,
            WriteKind::Overwrite | WriteKind::Update => {
                let mut next = match (&row, d.kind) {
                    (Some(old), WriteKind::Update) => old.clone(),
                    (Some(old), _) if d.aggregate => old.clone(),
                    _ => vec![Value::Null; schema.columns().len()],
                };
                for (i, (column, v)) in schema.columns().iter().zip(&d.values).enumerate() {
                    match v {
                        Some(v) => {
                            next[i] = match (&column.aggregate, d.aggregate, &row) {
                                (Some(f), true, Some(old)) => fold_aggregate(f, &old[i], v),
                                _ => v.clone(),
                            }
                        }
                        // Overwrite mode: a column that was not written becomes null, unless
                        // an aggregate write leaves it (YT keeps the old aggregate state).
                        None if d.kind == WriteKind::Overwrite
                            && !(d.aggregate && column.aggregate.is_some()) =>
                        {
                            next[i] = Value::Null
                        }
                        None => {}
                    }
                }
                row = Some(next);
            }
        }
    }
    row
}

/// Folds one aggregate delta into the current value (`sum`, `min`, `max`, `first`; schemas
/// with other aggregates are refused at creation).
pub fn fold_aggregate(function: &str, old: &Value, delta: &Value) -> Value {
    if delta.is_null() {
        return old.clone();
    }
    if old.is_null() {
        return delta.clone();
    }
    match function {
        "sum" => match (old, delta) {
            (Value::Int64(a), Value::Int64(b)) => Value::Int64(a.wrapping_add(*b)),
            (Value::Uint64(a), Value::Uint64(b)) => Value::Uint64(a.wrapping_add(*b)),
            (Value::Double(a), Value::Double(b)) => Value::Double(a + b),
            _ => delta.clone(),
        },
        "min" => {
            if compare_values(delta, old) == Ordering::Less {
                delta.clone()
            } else {
                old.clone()
            }
        }
        "max" => {
            if compare_values(delta, old) == Ordering::Greater {
                delta.clone()
            } else {
                old.clone()
            }
        }
        "first" => old.clone(),
        _ => delta.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn schema() -> TableSchema {
        TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=a;type=int64};{name=s;type=int64;aggregate=sum}]").unwrap()
    }

    fn delta(
        ts: u64,
        kind: WriteKind,
        a: Option<i64>,
        s: Option<i64>,
        aggregate: bool,
    ) -> RowDelta {
        RowDelta {
            timestamp: Timestamp(ts),
            kind,
            values: vec![
                Some(Value::Int64(1)),
                a.map(Value::Int64),
                s.map(Value::Int64),
            ],
            aggregate,
        }
    }

    #[test]
    fn update_keeps_unwritten_columns_and_overwrite_nulls_them() {
        let s = schema();
        let d = [
            delta(1, WriteKind::Overwrite, Some(5), Some(1), false),
            delta(2, WriteKind::Update, None, Some(7), false),
            delta(3, WriteKind::Overwrite, None, Some(2), false),
        ];
        let row = |t| resolve_versions(&s, &d, Timestamp(t));
        assert_eq!(row(0), None);
        assert_eq!(row(1).unwrap()[1..], [Value::Int64(5), Value::Int64(1)]);
        assert_eq!(row(2).unwrap()[1..], [Value::Int64(5), Value::Int64(7)]);
        assert_eq!(row(3).unwrap()[1..], [Value::Null, Value::Int64(2)]);
    }

    #[test]
    fn tombstones_hide_and_aggregates_fold() {
        let s = schema();
        let d = [
            delta(1, WriteKind::Overwrite, Some(1), Some(10), false),
            delta(2, WriteKind::Update, None, Some(5), true),
            delta(3, WriteKind::Update, None, Some(-3), true),
            delta(4, WriteKind::Delete, None, None, false),
            delta(5, WriteKind::Update, None, Some(4), true),
        ];
        assert_eq!(
            resolve_versions(&s, &d, Timestamp(3)).unwrap()[2],
            Value::Int64(12)
        );
        assert_eq!(resolve_versions(&s, &d, Timestamp(4)), None);
        assert_eq!(
            resolve_versions(&s, &d, Timestamp(5)).unwrap()[2],
            Value::Int64(4)
        );
    }

    // Model: a map from column to value per timestamp snapshot, replayed naively.
    proptest! {
        #[test]
        fn resolution_matches_a_replayed_model(ops in proptest::collection::vec((0u8..3, proptest::option::of(0i64..5), proptest::option::of(0i64..5)), 0..12), read in 0u64..14) {
            let s = schema();
            let deltas: Vec<RowDelta> = ops.iter().enumerate().map(|(i, (kind, a, v))| {
                let kind = match kind { 0 => WriteKind::Overwrite, 1 => WriteKind::Update, _ => WriteKind::Delete };
                delta(i as u64 + 1, kind, *a, *v, false)
            }).collect();
            // The model: a BTreeMap of column -> value, or absent.
            let mut model: Option<BTreeMap<usize, Value>> = None;
            for d in deltas.iter().filter(|d| d.timestamp.0 <= read) {
                match d.kind {
                    WriteKind::Delete => model = None,
                    WriteKind::Overwrite => {
                        model = Some(d.values.iter().enumerate().map(|(i, v)| (i, v.clone().unwrap_or(Value::Null))).collect())
                    }
                    WriteKind::Update => {
                        let mut m = model.take().unwrap_or_else(|| (0..3).map(|i| (i, Value::Null)).collect());
                        for (i, v) in d.values.iter().enumerate() {
                            if let Some(v) = v { m.insert(i, v.clone()); }
                        }
                        model = Some(m);
                    }
                }
            }
            let want = model.map(|m| m.into_values().collect::<Vec<_>>());
            prop_assert_eq!(resolve_versions(&s, &deltas, Timestamp(read)), want);
        }
    }
}
