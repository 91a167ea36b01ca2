//! GROUP BY WITH TOTALS over the groups a lowered plan aggregated: the aggregation gives each
//! group's key, its aggregates' states (encoded) and its ordinal (the order it first
//! appeared in, [`super::first_groups`]); here the states are finished into the group rows
//! and merged, in that order, into the totals row: null keys, then the aggregates of all
//! groups (before HAVING) or of the groups HAVING keeps (after it).

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use datafusion::error::DataFusionError;

use dynql_core::arrow_convert::{arrow_field, arrow_type, batch_to_rows, rows_to_batch};
use dynql_core::{Value, ValueType};
use dynql_ql::aggregate::AggregateState;
use dynql_ql::plan::GroupPlan;

use crate::error::{Error, Result};

/// The column numbering the finished groups: HAVING's survivors are found by it.
pub(crate) const GROUP_NUMBER: &str = "n";

/// The aggregated groups of a WITH TOTALS query, in the order they first appeared.
pub(crate) struct Groups {
    /// Keys, then the aggregates finished.
    pub(crate) rows: Vec<Vec<Value>>,
    /// The aggregates' states, per group.
    pub(crate) states: Vec<Vec<AggregateState>>,
}

impl Groups {
    /// The groups in `batches` (columns `g0`.., `s0`.., then the ordinal), whose key types
    /// are `keys`.
    pub(crate) fn new(
        batches: &[RecordBatch],
        group: &GroupPlan,
        keys: &[ValueType],
    ) -> Result<Groups> {
        let aggregates = group.aggregates.len();
        let mut types = keys.to_vec();
        types.extend(std::iter::repeat_n(ValueType::String, aggregates));
        types.push(ValueType::Uint64);
        let mut numbered = Vec::new();
        for batch in batches {
            let batch = super::lower::in_wire_types(batch, &types)?;
            for row in batch_to_rows(&batch, &types) {
                let mut values = row.into_iter();
                let key: Vec<Value> = values.by_ref().take(keys.len()).collect();
                let mut states = Vec::with_capacity(aggregates);
                for state in values.by_ref().take(aggregates) {
                    let Value::String(bytes) = state else {
                        return Err(internal("a group without its aggregate state"));
                    };
                    states.push(AggregateState::decode(&bytes)?);
                }
                let Some(Value::Uint64(ordinal)) = values.next() else {
                    return Err(internal("a group without its ordinal"));
                };
                numbered.push((ordinal, key, states));
            }
        }
        numbered.sort_by_key(|(ordinal, _, _)| *ordinal);
        let mut groups = Groups {
            rows: Vec::with_capacity(numbered.len()),
            states: Vec::with_capacity(numbered.len()),
        };
        for (_, mut key, states) in numbered {
            key.extend(states.iter().map(AggregateState::finish));
            groups.rows.push(key);
            groups.states.push(states);
        }
        Ok(groups)
    }

    /// The group rows as one batch: `g0`.., `a0`.. in their wire types, then
    /// [`GROUP_NUMBER`] (the group's position here).
    pub(crate) fn batch(&self, layout: &[(String, ValueType)]) -> Result<RecordBatch> {
        let schema = grouped_schema(layout, true);
        let rows: Vec<Vec<Value>> = self
            .rows
            .iter()
            .enumerate()
            .map(|(n, row)| {
                let mut row = row.clone();
                row.push(Value::Uint64(n as u64));
                row
            })
            .collect();
        Ok(rows_to_batch(&schema, &rows).map_err(DataFusionError::from)?)
    }

    /// The totals row over the groups numbered `kept` (all when `None`): null keys, then
    /// the merged aggregates. `None` when no group is kept.
    pub(crate) fn totals(&self, keys: usize, kept: Option<&[u64]>) -> Result<Option<Vec<Value>>> {
        let kept: Vec<usize> = match kept {
            Some(k) => {
                let mut k: Vec<usize> = k.iter().map(|&n| n as usize).collect();
                k.sort_unstable();
                k
            }
            None => (0..self.states.len()).collect(),
        };
        let mut merged: Option<Vec<AggregateState>> = None;
        for n in kept {
            let states = self
                .states
                .get(n)
                .ok_or_else(|| internal("a kept group that was not aggregated"))?;
            match &mut merged {
                None => merged = Some(states.clone()),
                Some(m) => {
                    for (a, b) in m.iter_mut().zip(states) {
                        a.merge(b)?;
                    }
                }
            }
        }
        Ok(merged.map(|states| {
            let mut row = vec![Value::Null; keys];
            row.extend(states.iter().map(AggregateState::finish));
            row
        }))
    }
}

/// The numbers of the groups in `batches` (their [`GROUP_NUMBER`] column).
pub(crate) fn group_numbers(batches: &[RecordBatch]) -> Result<Vec<u64>> {
    let mut numbers = Vec::new();
    for batch in batches {
        let column = batch
            .schema()
            .index_of(GROUP_NUMBER)
            .map_err(DataFusionError::from)?;
        let batch = batch.project(&[column]).map_err(DataFusionError::from)?;
        for row in batch_to_rows(&batch, &[ValueType::Uint64]) {
            if let Some(Value::Uint64(n)) = row.first() {
                numbers.push(*n);
            }
        }
    }
    Ok(numbers)
}

/// The schema of grouped rows named by `layout`, with [`GROUP_NUMBER`] when `numbered`.
pub(crate) fn grouped_schema(layout: &[(String, ValueType)], numbered: bool) -> SchemaRef {
    let mut fields: Vec<Field> = layout
        .iter()
        .map(|(name, t)| match t {
            // `any` keeps its type through the Arrow round trip.
            ValueType::Any => arrow_field(name, *t, "any"),
            t => Field::new(name, arrow_type(*t), true),
        })
        .collect();
    if numbered {
        fields.push(Field::new(GROUP_NUMBER, DataType::UInt64, false));
    }
    Arc::new(Schema::new(fields))
}

fn internal(what: &str) -> Error {
    Error::DataFusion(DataFusionError::Internal(format!("WITH TOTALS: {what}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dynql_ql::ast::TotalsMode;
    use dynql_ql::functions::AggregateFunction;
    use dynql_ql::plan::AggregateCall;
    use dynql_ql::texpr::{TExpr, TypedExpr};

    fn states(f: AggregateFunction, values: &[Value]) -> Vec<u8> {
        let mut s = AggregateState::new(f);
        for v in values {
            s.update(std::slice::from_ref(v)).unwrap();
        }
        s.encode()
    }

    #[test]
    fn groups_come_in_the_order_they_appeared_and_totals_merge_the_kept_ones() {
        let call = AggregateCall {
            function: AggregateFunction::First,
            args: vec![TypedExpr {
                kind: TExpr::Column(1),
                ty: ValueType::Int64,
            }],
            ty: ValueType::Int64,
        };
        let group = GroupPlan {
            keys: vec![TypedExpr {
                kind: TExpr::Column(0),
                ty: ValueType::Int64,
            }],
            aggregates: vec![call],
            having: None,
            totals: TotalsMode::BeforeHaving,
        };
        let schema = Arc::new(Schema::new(vec![
            Field::new("g0", DataType::Int64, true),
            Field::new("s0", DataType::Binary, true),
            Field::new("o", DataType::UInt64, false),
        ]));
        let rows = vec![
            vec![
                Value::Int64(7),
                Value::String(states(AggregateFunction::First, &[Value::Int64(30)])),
                Value::Uint64(1),
            ],
            vec![
                Value::Int64(5),
                Value::String(states(AggregateFunction::First, &[Value::Int64(10)])),
                Value::Uint64(0),
            ],
        ];
        let batch = rows_to_batch(&schema, &rows).unwrap();
        let groups = Groups::new(&[batch], &group, &[ValueType::Int64]).unwrap();
        assert_eq!(
            groups.rows,
            vec![
                vec![Value::Int64(5), Value::Int64(10)],
                vec![Value::Int64(7), Value::Int64(30)],
            ]
        );
        // `first` of the totals is the first group's.
        assert_eq!(
            groups.totals(1, None).unwrap(),
            Some(vec![Value::Null, Value::Int64(10)])
        );
        assert_eq!(
            groups.totals(1, Some(&[1])).unwrap(),
            Some(vec![Value::Null, Value::Int64(30)])
        );
        assert_eq!(groups.totals(1, Some(&[])).unwrap(), None);
    }
}
