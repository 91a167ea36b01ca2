//! From a bound query to what the scans read: key ranges of the main table inferred from
//! WHERE ([`dynql_ql::ranges`]), the full-scan guard, key ranges of joined tables from the
//! join keys of the rows already read, and `explain-query`.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::ArrayRef;
use dynql_core::arrow_convert::array_value;
use dynql_core::{TableSchema, Value, ValueType};
use dynql_ql::plan::{JoinPlan, QueryPlan};
use dynql_ql::ranges::{infer_key_ranges, used_key_width, RangeOptions};
use dynql_ql::texpr::{TExpr, TypedExpr};
use dynql_storage::{KeyRange, ScanStatistics};

use crate::error::{Error, Result};

/// YT's message when `allow_full_scan` is false and WHERE fixes no key prefix.
pub const FULL_SCAN_MESSAGE: &str = "Primary table key is not used in the where clause (full scan); the query is inefficient, consider rewriting it";

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
) -> Result<Vec<KeyRange>> {
    let schema = &plan.sources[0].schema;
    if !schema.is_sorted() {
        return Ok(vec![KeyRange::all()]);
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

/// For a join whose equations fix key columns of the foreign table: the key ranges that
/// hold the foreign rows the rows already joined can match, inferred from `(fixed columns)
/// IN (the distinct values the rows ask for)`, so computed key columns over the fixed ones
/// are enumerated as in WHERE; the values are read at `distinct_rows` of `self_keys` (a row
/// of each distinct tuple). `None` when that fixes no key prefix (the foreign table is read
/// whole).
pub fn join_ranges(
    join: &JoinPlan,
    foreign: &TableSchema,
    self_keys: &[ArrayRef],
    distinct_rows: &[u32],
) -> Result<Option<Vec<KeyRange>>> {
    let fixed = fixed_columns(join);
    if fixed.is_empty() || !foreign.is_sorted() {
        return Ok(None);
    }
    // The rows of distinct tuples of every equation: their fixed values may still repeat.
    let set: HashSet<Vec<Value>> = distinct_rows
        .iter()
        .map(|&r| {
            fixed
                .iter()
                .map(|&(i, _)| array_value(self_keys[i].as_ref(), join.self_keys[i].ty, r as usize))
                .collect()
        })
        .collect();
    if set.is_empty() {
        return Ok(Some(Vec::new()));
    }
    Ok(lookup_ranges(join, foreign, &fixed, set))
}

/// Whether a join reads the foreign table by key (see [`join_ranges`]) rather than whole.
pub fn join_reads_by_key(join: &JoinPlan, foreign: &TableSchema) -> bool {
    let fixed = fixed_columns(join);
    let nulls = HashSet::from([vec![Value::Null; fixed.len()]]);
    !fixed.is_empty()
        && foreign.is_sorted()
        && lookup_ranges(join, foreign, &fixed, nulls).is_some()
}

/// The equations on plain foreign columns, one per column: (equation, column).
fn fixed_columns(join: &JoinPlan) -> Vec<(usize, usize)> {
    let mut fixed: Vec<(usize, usize)> = Vec::new();
    for (i, e) in join.foreign_keys.iter().enumerate() {
        if let TExpr::Column(c) = e.kind {
            if fixed.iter().all(|&(_, seen)| seen != c) {
                fixed.push((i, c));
            }
        }
    }
    fixed
}

/// The key ranges of `(fixed columns) IN set`; `None` when they fix no key prefix.
fn lookup_ranges(
    join: &JoinPlan,
    foreign: &TableSchema,
    fixed: &[(usize, usize)],
    set: HashSet<Vec<Value>>,
) -> Option<Vec<KeyRange>> {
    let predicate = TypedExpr::new(
        TExpr::In {
            operands: fixed
                .iter()
                .map(|&(i, c)| TypedExpr::new(TExpr::Column(c), join.foreign_keys[i].ty))
                .collect(),
            set: Arc::new(set),
            negated: false,
        },
        ValueType::Boolean,
    );
    // A computed key column that cannot be enumerated for some value: read everything.
    let inferred = infer_key_ranges(foreign, Some(&predicate), &RangeOptions::default()).ok()?;
    (used_key_width(&inferred) > 0).then_some(inferred)
}

/// What `explain-query` reports: the main table's inferred key ranges and what a scan of
/// them reads.
#[derive(Debug, Clone)]
pub struct Explanation {
    pub ranges: Vec<KeyRange>,
    pub read: ScanStatistics,
    /// The physical plan that runs the query, as indented text (`None` when not known);
    /// after a run, the plans that ran, with their operators' metrics.
    pub plan: Option<String>,
    /// What a run of the query did (`explain-query --analyze`); `None` when it did not run.
    pub analysis: Option<Analysis>,
}

/// What one run of a query did (EXPLAIN ANALYZE).
#[derive(Debug, Clone)]
pub struct Analysis {
    /// Rows in the result.
    pub result_rows: u64,
    /// What it read, as `--print-statistics` shows it.
    pub statistics: crate::select::Statistics,
    /// From binding the query to its last row.
    pub elapsed: std::time::Duration,
}

impl Explanation {
    /// The JSON object printed by `explain-query --format json`.
    pub fn to_json(&self) -> serde_json::Value {
        let pair = |(a, b): (usize, usize)| serde_json::json!([a, b]);
        let plan = self.plan.clone().unwrap_or_default();
        let mut out = serde_json::json!({
            "ranges": self.ranges.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
            "read": {
                "tablets": pair(self.read.tablets),
                "chunks": pair(self.read.chunks),
                "row_groups": pair(self.read.row_groups),
            },
            "plan": plan,
        });
        if let Some(a) = &self.analysis {
            let s = &a.statistics;
            out["analysis"] = serde_json::json!({
                "result_rows": a.result_rows,
                "elapsed_ms": a.elapsed.as_secs_f64() * 1000.0,
                "rows_read": s.rows_read,
                "data_weight": s.data_weight_read,
                "rows_decoded": s.scan.rows_decoded,
                "tablets_read": s.scan.tablets.0,
                "chunks_read": s.scan.chunks.0,
                "row_groups_read": s.scan.row_groups.0,
                "chunks_skipped_by_key_filter": s.scan.chunks_skipped_by_key_filter,
                "incomplete_input": s.incomplete_input,
                "incomplete_output": s.incomplete_output,
            });
        }
        out
    }
}
