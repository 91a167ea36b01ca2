//! A reference model of `select_rows` for the differential test: the bound plan evaluated
//! row by row with the row evaluator over the table's rows in key order, as plainly as
//! possible (nested-loop joins, groups found by linear search, a stable sort), with YT's row
//! limits. It knows nothing of batches, partitions or DataFusion. The main table is read at
//! the key ranges inferred from WHERE, as YT counts its input rows there (range inference has
//! its own test against brute-force filtering).

use dynql_core::{compare_values, TableSchema, Value};
use dynql_exec::{Error, SelectOptions};
use dynql_ql::aggregate::AggregateState;
use dynql_ql::ast::TotalsMode;
use dynql_ql::binder::Catalog;
use dynql_ql::eval::{evaluate, evaluate_predicate, EvalOptions};
use dynql_ql::plan::QueryPlan;
use dynql_ql::texpr::{TExpr, TypedExpr};
use dynql_ql::{bind_query, BindOptions};

/// A table of the model: its schema and its rows in key order.
pub struct Table {
    pub path: String,
    pub schema: TableSchema,
    pub rows: Vec<Vec<Value>>,
}

/// What a query gives: rows, and whether the input or output was cut at a row limit.
#[derive(Debug)]
pub struct Outcome {
    pub rows: Vec<Vec<Value>>,
    /// Rows read from the main table: the least a scan must read (the rows that pass WHERE:
    /// column statistics may skip the others), and the most it may (every row in the key
    /// ranges, or, for a scan that stops early, whole batches of them).
    pub rows_read: (u64, u64),
    /// The read stopped once OFFSET + LIMIT rows passed WHERE.
    pub stopped: bool,
    pub incomplete_input: bool,
    pub incomplete_output: bool,
}

struct Tables<'a>(&'a [Table]);

impl Catalog for Tables<'_> {
    fn table_schema(&self, path: &str) -> Option<TableSchema> {
        self.0
            .iter()
            .find(|t| t.path == path)
            .map(|t| t.schema.clone())
    }
}

fn runtime(message: &str) -> Error {
    Error::Query(dynql_ql::Error::Runtime(message.into()))
}

fn eval_all(exprs: &[TypedExpr], row: &[Value], opts: EvalOptions) -> Result<Vec<Value>, Error> {
    exprs
        .iter()
        .map(|e| evaluate(e, row, opts).map_err(Error::from))
        .collect()
}

/// Runs `query` over `tables` as YT defines it.
pub fn select(tables: &[Table], query: &str, options: &SelectOptions) -> Result<Outcome, Error> {
    let bind = BindOptions {
        allow_join_without_index: options.allow_join_without_index,
        canonical_null_relations: options.use_canonical_null_relations,
    };
    let plan = bind_query(query, None, &Tables(tables), bind)?;
    let opts = EvalOptions {
        canonical_null_relations: options.use_canonical_null_relations,
    };
    let table = |path: &str| tables.iter().find(|t| t.path == path).expect("bound table");
    let main = table(&plan.sources[0].path);
    let mut out = Outcome {
        rows: Vec::new(),
        rows_read: (0, 0),
        stopped: false,
        incomplete_input: false,
        incomplete_output: false,
    };

    // Read the main table in key order. Rows wanted in key order (no joins, no grouping, no
    // ORDER BY or one by a key prefix) are read only until OFFSET + LIMIT of them pass WHERE,
    // or one past the output row limit: then the result is known.
    let key_order_limit = plan.joins.is_empty()
        && plan.group.is_none()
        && plan.order_by.len() <= main.schema.key_column_count()
        && plan
            .order_by
            .iter()
            .enumerate()
            .all(|(i, (e, desc))| !desc && matches!(e.kind, TExpr::Column(c) if c == i));
    let wanted = plan.offset.saturating_add(
        plan.limit
            .unwrap_or(u64::MAX)
            .min(options.output_row_limit.saturating_add(1)),
    );
    let mut rows = Vec::new();
    let mut passed = 0u64;
    let ranges = dynql_exec::scan::main_table_ranges(
        &plan,
        options.range_expansion_limit,
        options.allow_full_scan,
    )?;
    let keys = main.schema.key_column_count();
    let in_ranges = main
        .rows
        .iter()
        .filter(|row| ranges.iter().any(|r| r.contains(&row[..keys])));
    let mut read = 0u64;
    let mut rejected = 0u64;
    let mut stopped = false;
    for row in in_ranges.clone() {
        if key_order_limit && passed >= wanted {
            stopped = true;
            break;
        }
        if read >= options.input_row_limit {
            if options.fail_on_incomplete_result {
                return Err(Error::LimitExceeded { what: "input" });
            }
            out.incomplete_input = true;
            break;
        }
        read += 1;
        if key_order_limit {
            if let Some(w) = &plan.where_clause {
                if !evaluate_predicate(w, row, opts)? {
                    continue;
                }
            }
            passed += 1;
        } else if plan.joins.is_empty() {
            if let Some(w) = &plan.where_clause {
                if !evaluate_predicate(w, row, opts).unwrap_or(true) {
                    rejected += 1;
                }
            }
        }
        rows.push(row.clone());
    }

    // Column statistics (row group and page min/max, null counts) may skip rows WHERE
    // rejects, and `rows_read` counts only what was read: the least is the rows that pass.
    out.stopped = stopped;
    out.rows_read = if stopped {
        (
            passed,
            (in_ranges.count() as u64).min(options.input_row_limit),
        )
    } else if key_order_limit {
        (passed, read)
    } else {
        (read - rejected, read)
    };

    // Lookup joins, as nested loops over the whole joined table.
    for join in &plan.joins {
        let foreign = table(&plan.sources[join.source].path);
        let width = foreign.schema.columns().len();
        let mut joined = Vec::new();
        for r in rows {
            let key = eval_all(&join.self_keys, &r, opts)?;
            let mut matched = false;
            for f in &foreign.rows {
                if let Some(p) = &join.foreign_predicate {
                    if !evaluate_predicate(p, f, opts)? {
                        continue;
                    }
                }
                if eval_all(&join.foreign_keys, f, opts)? == key {
                    matched = true;
                    joined.push([r.clone(), f.clone()].concat());
                }
            }
            if !matched && join.left_outer {
                joined.push([r, vec![Value::Null; width]].concat());
            }
        }
        if joined.len() as u64 > options.output_row_limit {
            if options.fail_on_incomplete_result {
                return Err(Error::LimitExceeded { what: "output" });
            }
            out.incomplete_output = true;
            joined.truncate(options.output_row_limit as usize);
        }
        rows = joined;
    }

    if let Some(w) = &plan.where_clause {
        let mut kept = Vec::new();
        for r in rows {
            if evaluate_predicate(w, &r, opts)? {
                kept.push(r);
            }
        }
        rows = kept;
    }

    let mut totals_row = None;
    if let Some(group) = &plan.group {
        // LIMIT without ORDER BY keeps the first groups in scan order; rows of later groups
        // are not read, and so not in the totals either.
        let cap = match (plan.limit, plan.order_by.is_empty()) {
            (Some(limit), true) => plan.offset.saturating_add(limit),
            _ => u64::MAX,
        };
        let mut groups: Vec<(Vec<Value>, Vec<AggregateState>)> = Vec::new();
        for r in &rows {
            let key = eval_all(&group.keys, r, opts)?;
            if group.totals != TotalsMode::None && key.iter().any(Value::is_null) {
                return Err(runtime(
                    "Null values are forbidden in group key when WITH TOTALS is used",
                ));
            }
            let slot = match groups.iter().position(|(k, _)| *k == key) {
                Some(i) => i,
                None if groups.len() as u64 >= cap => continue,
                None if groups.len() as u64 >= options.output_row_limit => {
                    if options.fail_on_incomplete_result {
                        return Err(Error::LimitExceeded { what: "output" });
                    }
                    out.incomplete_output = true;
                    continue;
                }
                None => {
                    let states = group
                        .aggregates
                        .iter()
                        .map(|a| AggregateState::new(a.function))
                        .collect();
                    groups.push((key, states));
                    groups.len() - 1
                }
            };
            for (state, call) in groups[slot].1.iter_mut().zip(&group.aggregates) {
                state.update(&eval_all(&call.args, r, opts)?)?;
            }
        }
        let finish = |key: &[Value], states: &[AggregateState]| -> Vec<Value> {
            let mut row = key.to_vec();
            row.extend(states.iter().map(AggregateState::finish));
            row
        };
        let mut totals: Option<Vec<AggregateState>> = None;
        let mut grouped = Vec::new();
        for (key, states) in &groups {
            let row = finish(key, states);
            let keep = match &group.having {
                Some(h) => evaluate_predicate(h, &row, opts)?,
                None => true,
            };
            let merged = match group.totals {
                TotalsMode::None => false,
                TotalsMode::BeforeHaving => true,
                TotalsMode::AfterHaving => keep,
            };
            if merged {
                match &mut totals {
                    None => totals = Some(states.clone()),
                    Some(t) => {
                        for (a, b) in t.iter_mut().zip(states) {
                            a.merge(b)?;
                        }
                    }
                }
            }
            if keep {
                grouped.push(row);
            }
        }
        totals_row = totals.map(|t| finish(&vec![Value::Null; group.keys.len()], &t));
        rows = grouped;
    }

    order(&plan, &mut rows, opts)?;
    let offset = plan.offset.min(rows.len() as u64) as usize;
    rows.drain(..offset);
    if let Some(limit) = plan.limit {
        rows.truncate(limit.min(rows.len() as u64) as usize);
    }
    rows.extend(totals_row);
    for r in &rows {
        out.rows.push(
            plan.projections
                .iter()
                .map(|p| evaluate(&p.expr, r, opts))
                .collect::<Result<Vec<_>, _>>()?,
        );
    }
    if out.rows.len() as u64 > options.output_row_limit {
        if options.fail_on_incomplete_result {
            return Err(Error::LimitExceeded { what: "output" });
        }
        out.incomplete_output = true;
        out.rows.truncate(options.output_row_limit as usize);
    }
    Ok(out)
}

/// ORDER BY in YT's value order (stable); a NaN in a sort key fails.
fn order(plan: &QueryPlan, rows: &mut Vec<Vec<Value>>, opts: EvalOptions) -> Result<(), Error> {
    if plan.order_by.is_empty() {
        return Ok(());
    }
    let mut keyed = Vec::new();
    for r in rows.drain(..) {
        let key = plan
            .order_by
            .iter()
            .map(|(e, _)| evaluate(e, &r, opts))
            .collect::<Result<Vec<_>, _>>()?;
        if key
            .iter()
            .any(|v| matches!(v, Value::Double(d) if d.is_nan()))
        {
            return Err(runtime("Comparison with NaN in ORDER BY"));
        }
        keyed.push((key, r));
    }
    keyed.sort_by(|(a, _), (b, _)| {
        a.iter()
            .zip(b)
            .zip(&plan.order_by)
            .map(|((x, y), (_, desc))| {
                let o = compare_values(x, y);
                if *desc {
                    o.reverse()
                } else {
                    o
                }
            })
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    rows.extend(keyed.into_iter().map(|(_, r)| r));
    Ok(())
}
