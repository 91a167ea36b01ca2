//! From a bound query to what the scans read: key ranges of the main table inferred from
//! WHERE ([`dynql_ql::ranges`]), the full-scan guard, key ranges of joined tables from the
//! join keys of the rows already read, and `explain-query`.

use std::collections::BTreeSet;

use dynql_core::{TableSchema, Value};
use dynql_ql::eval::{evaluate, EvalOptions};
use dynql_ql::plan::{JoinPlan, QueryPlan};
use dynql_ql::ranges::{self, infer_key_ranges, used_key_width, KeyBoundValue, RangeOptions};
use dynql_ql::texpr::TExpr;
use dynql_storage::{KeyBound, KeyRange, ScanStatistics};

use crate::error::{Error, Result};

/// YT's message when `allow_full_scan` is false and WHERE fixes no key prefix.
pub const FULL_SCAN_MESSAGE: &str = "Primary table key is not used in the where clause (full scan); the query is inefficient, consider rewriting it";

/// A storage bound from an inferred one: the values up to the first sentinel, and "after"
/// when that sentinel is MAX (`[50, MAX]` is just after every key starting with 50).
fn storage_bound(values: &[KeyBoundValue]) -> KeyBound {
    let mut prefix = Vec::new();
    for v in values {
        match v {
            KeyBoundValue::Value(v) => prefix.push(v.clone()),
            KeyBoundValue::Max => return KeyBound::new(prefix, true),
            KeyBoundValue::Min => break,
        }
    }
    KeyBound::new(prefix, false)
}

/// The storage form of inferred key ranges.
pub fn storage_ranges(inferred: &[ranges::KeyRange]) -> Vec<KeyRange> {
    inferred
        .iter()
        .map(|r| KeyRange {
            lower: storage_bound(&r.lower),
            upper: storage_bound(&r.upper),
        })
        .collect()
}

/// The key ranges of the main table that hold every row WHERE can accept. Ordered tables
/// (no key) read everything.
///
/// # Errors
/// Range inference errors, and YT's full-scan error when `allow_full_scan` is false and the
/// ranges use no key prefix.
pub fn main_table_ranges(
    plan: &QueryPlan,
    range_expansion_limit: u64,
    allow_full_scan: bool,
) -> Result<Vec<ranges::KeyRange>> {
    let schema = &plan.sources[0].schema;
    if !schema.is_sorted() {
        return Ok(vec![ranges::KeyRange::full()]);
    }
    let options = RangeOptions {
        range_expansion_limit,
    };
    let inferred = infer_key_ranges(schema, plan.where_clause.as_ref(), &options)?;
    if !allow_full_scan && used_key_width(&inferred) == 0 {
        return Err(Error::Query(dynql_ql::Error::invalid_query(
            FULL_SCAN_MESSAGE,
        )));
    }
    Ok(inferred)
}

/// For a join whose equations fix a prefix of the foreign table's key: the point ranges of
/// the distinct prefixes the rows already joined ask for (only those foreign rows can
/// match). `None` when the equations fix no key prefix (the foreign table is read whole).
pub fn join_ranges(
    join: &JoinPlan,
    foreign: &TableSchema,
    rows: &[Vec<Value>],
    opts: EvalOptions,
) -> Result<Option<Vec<KeyRange>>> {
    // Equation index for each leading key column of the foreign table.
    let mut prefix = Vec::new();
    for column in 0..foreign.key_column_count() {
        let equation = join
            .foreign_keys
            .iter()
            .position(|e| matches!(e.kind, TExpr::Column(c) if c == column));
        match equation {
            Some(i) => prefix.push(i),
            None => break,
        }
    }
    if prefix.is_empty() {
        return Ok(None);
    }
    let mut keys: BTreeSet<KeyOrder> = BTreeSet::new();
    for r in rows {
        let mut key = Vec::with_capacity(prefix.len());
        for &i in &prefix {
            key.push(evaluate(&join.self_keys[i], r, opts)?);
        }
        keys.insert(KeyOrder(key));
    }
    Ok(Some(
        keys.into_iter()
            .map(|k| KeyRange {
                lower: KeyBound::new(k.0.clone(), false),
                upper: KeyBound::new(k.0, true),
            })
            .collect(),
    ))
}

/// A key prefix in YT order.
#[derive(PartialEq, Eq)]
struct KeyOrder(Vec<Value>);

impl PartialOrd for KeyOrder {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for KeyOrder {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        dynql_core::compare_rows(&self.0, &other.0)
    }
}

/// What `explain-query` reports: the main table's inferred key ranges and what a scan of
/// them reads.
#[derive(Debug, Clone)]
pub struct Explanation {
    pub ranges: Vec<ranges::KeyRange>,
    pub read: ScanStatistics,
    /// The physical plan that runs the query, as indented text (`None` for queries the row
    /// pipeline still runs: joins, WITH TOTALS, LIMIT of groups without ORDER BY).
    pub plan: Option<String>,
}

impl Explanation {
    /// The JSON object printed by `explain-query --format json`.
    pub fn to_json(&self) -> serde_json::Value {
        let pair = |(a, b): (usize, usize)| serde_json::json!([a, b]);
        let plan = self.plan.clone().unwrap_or_else(|| {
            "RowPipeline: joins, WITH TOTALS or LIMIT of groups without ORDER BY run row by row"
                .to_string()
        });
        serde_json::json!({
            "ranges": self.ranges.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
            "read": {
                "tablets": pair(self.read.tablets),
                "chunks": pair(self.read.chunks),
                "row_groups": pair(self.read.row_groups),
            },
            "plan": plan,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinels_become_prefix_bounds() {
        let v = |i: i64| KeyBoundValue::Value(Value::Int64(i));
        assert_eq!(
            storage_bound(&[v(50), v(40), KeyBoundValue::Max]),
            KeyBound::new(vec![Value::Int64(50), Value::Int64(40)], true)
        );
        assert_eq!(storage_bound(&[KeyBoundValue::Max]), KeyBound::max());
        assert_eq!(storage_bound(&[]), KeyBound::min());
        assert_eq!(
            storage_bound(&[v(1), KeyBoundValue::Min, v(3)]),
            KeyBound::new(vec![Value::Int64(1)], false)
        );
    }
}
