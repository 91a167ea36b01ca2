//! GROUP BY WITH TOTALS as a plan operator. The aggregation gives each group's key, its
//! aggregates' values, the columns their states are rebuilt from ([`StateColumns`]) and its
//! ordinal (the order it first appeared in, [`super::first_groups`]). [`TotalsExec`] sits
//! on the groups before HAVING (totals of all groups) or after it (of the groups it keeps),
//! holds them until the last has come, merges their states in the order the groups first
//! appeared into the totals row (null keys, then the aggregates finished), projects that row
//! as the groups are projected, and puts it in a [`TotalsSlot`] that the result gives after
//! its last group; then it hands the groups on unchanged to ORDER BY, LIMIT and the
//! projection. The whole query stays one DataFusion plan.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use arrow::array::ArrayRef;
use arrow::datatypes::{Field, Schema};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};

use dynql_core::arrow_convert::batch_to_rows;
use dynql_core::{Value, ValueType};
use dynql_ql::aggregate::AggregateState;
use dynql_ql::eval::EvalOptions;
use dynql_ql::functions::AggregateFunction;
use dynql_ql::texpr::TypedExpr;

use super::budget::Budget;
use super::evaluate::{evaluate, to_array, Batch};
use super::first_groups::ORDINAL;
use super::group_limit::{held_then_passed, one_partition};
use crate::error::{Error, Result};
use crate::select::MAX_BATCH_STRING_BYTES;

/// How a WITH TOTALS aggregation hands on one aggregate's state per group.
///
/// Most states are cheap to rebuild from columns DataFusion's own aggregates compute: the
/// state of `sum`, `min`, `max` and `first` is their value, and that of a numeric `avg` is
/// its sum and count. The others are computed as encoded [`AggregateState`]s, row by row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StateColumns {
    /// The aggregate's value (`a{i}`): the state of `function` holding it.
    Finished(AggregateFunction),
    /// The average (`a{i}`), the sum of the values as doubles (`s{i}_sum`) and their count
    /// (`s{i}_count`).
    Average,
    /// The encoded state (`s{i}`), beside the value (`a{i}`).
    Encoded,
}

impl StateColumns {
    /// The state columns of `call`, given whether its value is computed by DataFusion's
    /// own average (`native_average`).
    pub(crate) fn of(function: AggregateFunction, native_average: bool) -> StateColumns {
        match function {
            AggregateFunction::Sum
            | AggregateFunction::Min
            | AggregateFunction::Max
            | AggregateFunction::First => StateColumns::Finished(function),
            AggregateFunction::Avg if native_average => StateColumns::Average,
            _ => StateColumns::Encoded,
        }
    }

    /// The names of the columns the state of aggregate `i` is read from, with their YT
    /// types (`finished`: the aggregate's own type).
    fn columns(self, i: usize, finished: ValueType) -> Vec<(String, ValueType)> {
        match self {
            StateColumns::Finished(_) => vec![(format!("a{i}"), finished)],
            StateColumns::Average => vec![
                (format!("a{i}"), ValueType::Double),
                (format!("s{i}_sum"), ValueType::Double),
                (format!("s{i}_count"), ValueType::Int64),
            ],
            StateColumns::Encoded => vec![(format!("s{i}"), ValueType::String)],
        }
    }

    /// The state of one group from its values of the columns.
    fn state(self, values: &mut impl Iterator<Item = Value>) -> Result<AggregateState> {
        Ok(match self {
            StateColumns::Finished(function) => {
                let mut state = AggregateState::new(function);
                let value = values.next().unwrap_or(Value::Null);
                state.update(std::slice::from_ref(&value))?;
                state
            }
            StateColumns::Average => {
                let _average = values.next();
                let sum = match values.next() {
                    Some(Value::Double(sum)) => sum,
                    _ => 0.0,
                };
                let count = match values.next() {
                    Some(Value::Int64(count)) => u64::try_from(count).unwrap_or(0),
                    _ => 0,
                };
                AggregateState::Avg { sum, count }
            }
            StateColumns::Encoded => {
                let Some(Value::String(bytes)) = values.next() else {
                    return Err(internal("a group without its aggregate state"));
                };
                AggregateState::decode(&bytes)?
            }
        })
    }
}

/// The projected totals row, once [`TotalsExec`] has seen every group (`None` inside when
/// no group reached it).
pub(crate) type TotalsSlot = Arc<Mutex<Option<RecordBatch>>>;

/// What [`TotalsExec`] merges and how it projects the totals row.
#[derive(Debug)]
pub(crate) struct Totals {
    /// The group keys' types.
    pub(crate) keys: Vec<ValueType>,
    /// Each aggregate's state columns and its type.
    pub(crate) aggregates: Vec<(StateColumns, ValueType)>,
    /// The query's projections, over the grouped rows (keys, then aggregates).
    pub(crate) projections: Vec<TypedExpr>,
    /// Whether the groups carry their ordinal ([`ORDINAL`]) and the states merge in its
    /// order; without it (no `first` aggregate, whose totals take the first group's) the
    /// merge's result does not depend on the order and the groups merge as they come.
    pub(crate) by_ordinal: bool,
    pub(crate) opts: EvalOptions,
}

impl Totals {
    /// The totals row of `groups` (each the states of one group with its ordinal, 0
    /// without [`Totals::by_ordinal`]): the states merged in ordinal order, finished, and
    /// projected; `None` without groups.
    fn row(&self, mut groups: Vec<(u64, Vec<AggregateState>)>) -> Result<Option<RecordBatch>> {
        // Stable: groups without ordinals keep the order they came in.
        groups.sort_by_key(|(ordinal, _)| *ordinal);
        let mut groups = groups.into_iter();
        let Some((_, mut merged)) = groups.next() else {
            return Ok(None);
        };
        for (_, states) in groups {
            for (a, b) in merged.iter_mut().zip(&states) {
                a.merge(b)?;
            }
        }
        let mut types = self.keys.clone();
        types.extend(self.aggregates.iter().map(|(_, t)| *t));
        let values = std::iter::repeat_n(Value::Null, self.keys.len())
            .chain(merged.iter().map(AggregateState::finish));
        let columns = types
            .iter()
            .zip(values)
            .map(|(t, v)| to_array(*t, &[v]))
            .collect::<dynql_ql::Result<Vec<ArrayRef>>>()?;
        let budget = Budget::new(MAX_BATCH_STRING_BYTES, 1);
        let input = Batch {
            columns: &columns,
            types: &types,
            rows: 1,
            budget: &budget,
        };
        let projected = self
            .projections
            .iter()
            .map(|p| evaluate(p, input, self.opts))
            .collect::<dynql_ql::Result<Vec<ArrayRef>>>()?;
        let fields: Vec<Field> = projected
            .iter()
            .enumerate()
            .map(|(i, c)| Field::new(format!("p{i}"), c.data_type().clone(), true))
            .collect();
        Ok(Some(
            RecordBatch::try_new_with_options(
                Arc::new(Schema::new(fields)),
                projected,
                &RecordBatchOptions::new().with_row_count(Some(1)),
            )
            .map_err(DataFusionError::from)?,
        ))
    }

    /// The states of the groups in `batch`, with their ordinals.
    fn states_of(&self, batch: &RecordBatch) -> Result<Vec<(u64, Vec<AggregateState>)>> {
        let mut columns: Vec<(String, ValueType)> = Vec::new();
        for (i, (state, ty)) in self.aggregates.iter().enumerate() {
            columns.extend(state.columns(i, *ty));
        }
        if self.by_ordinal {
            columns.push((ORDINAL.to_string(), ValueType::Uint64));
        }
        let schema = batch.schema();
        let indices = columns
            .iter()
            .map(|(name, _)| schema.index_of(name))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(DataFusionError::from)?;
        let read = batch.project(&indices).map_err(DataFusionError::from)?;
        let types: Vec<ValueType> = columns.iter().map(|(_, t)| *t).collect();
        let read = super::lower::in_wire_types(&read, &types)?;
        let mut groups = Vec::with_capacity(read.num_rows());
        for row in batch_to_rows(&read, &types) {
            let mut values = row.into_iter();
            let states = self
                .aggregates
                .iter()
                .map(|(state, _)| state.state(&mut values))
                .collect::<Result<Vec<_>>>()?;
            let ordinal = match values.next() {
                Some(Value::Uint64(ordinal)) => ordinal,
                None if !self.by_ordinal => 0,
                _ => return Err(internal("a group without its ordinal")),
            };
            groups.push((ordinal, states));
        }
        Ok(groups)
    }
}

/// Passes its groups on once all have come, having put their totals row in its slot.
#[derive(Debug)]
pub(crate) struct TotalsExec {
    input: Arc<dyn ExecutionPlan>,
    totals: Arc<Totals>,
    slot: TotalsSlot,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl TotalsExec {
    /// Over the groups of `input` (its partitions merged into one).
    pub(crate) fn new(
        input: Arc<dyn ExecutionPlan>,
        totals: Arc<Totals>,
        slot: TotalsSlot,
    ) -> TotalsExec {
        let (input, properties) = one_partition(input);
        TotalsExec {
            input,
            totals,
            slot,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }
}

impl DisplayAs for TotalsExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TotalsExec: aggregates={}", self.totals.aggregates.len())
    }
}

impl ExecutionPlan for TotalsExec {
    fn name(&self) -> &str {
        "TotalsExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let [input] = <[_; 1]>::try_from(children)
            .map_err(|_| DataFusionError::Internal("TotalsExec has one child".into()))?;
        Ok(Arc::new(TotalsExec::new(
            input,
            self.totals.clone(),
            self.slot.clone(),
        )))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(
                "TotalsExec has one partition".into(),
            ));
        }
        let input = self.input.execute(0, context)?;
        let (totals, slot) = (self.totals.clone(), self.slot.clone());
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let elapsed = baseline.elapsed_compute().clone();
        Ok(held_then_passed(input, baseline, move |batches| {
            let _timer = elapsed.timer();
            let mut states = Vec::new();
            for batch in batches {
                states.extend(totals.states_of(batch).map_err(external)?);
            }
            let row = totals.row(states).map_err(external)?;
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = row;
            Ok(())
        }))
    }
}

fn external(e: Error) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

fn internal(what: &str) -> Error {
    Error::DataFusion(DataFusionError::Internal(format!("WITH TOTALS: {what}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{BinaryArray, Int64Array, UInt64Array};
    use arrow::datatypes::DataType;
    use datafusion::datasource::memory::MemorySourceConfig;
    use dynql_ql::texpr::TExpr;
    use futures::TryStreamExt;

    fn encoded(f: AggregateFunction, values: &[Value]) -> Vec<u8> {
        let mut s = AggregateState::new(f);
        for v in values {
            s.update(std::slice::from_ref(v)).unwrap();
        }
        s.encode()
    }

    /// Groups keyed by `g0`, with `first` as an encoded state and `sum` as its value, in
    /// two partitions and out of their ordinal order.
    fn groups() -> Arc<dyn ExecutionPlan> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("g0", DataType::Int64, true),
            Field::new("a0", DataType::Int64, true),
            Field::new("s0", DataType::Binary, true),
            Field::new("a1", DataType::Int64, true),
            Field::new(ORDINAL, DataType::UInt64, false),
        ]));
        let batch = |g: i64, first: i64, sum: i64, ordinal: u64| {
            let state = encoded(AggregateFunction::First, &[Value::Int64(first)]);
            RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int64Array::from(vec![g])),
                    Arc::new(Int64Array::from(vec![first])),
                    Arc::new(BinaryArray::from(vec![state.as_slice()])),
                    Arc::new(Int64Array::from(vec![sum])),
                    Arc::new(UInt64Array::from(vec![ordinal])),
                ],
            )
            .unwrap()
        };
        let partitions = vec![vec![batch(7, 30, 3, 1)], vec![batch(5, 10, 4, 0)]];
        MemorySourceConfig::try_new_exec(&partitions, schema, None).unwrap()
    }

    fn totals() -> Arc<Totals> {
        let column = |i, ty| TypedExpr::new(TExpr::Column(i), ty);
        Arc::new(Totals {
            keys: vec![ValueType::Int64],
            aggregates: vec![
                (StateColumns::Encoded, ValueType::Int64),
                (
                    StateColumns::Finished(AggregateFunction::Sum),
                    ValueType::Int64,
                ),
            ],
            projections: vec![
                column(0, ValueType::Int64),
                column(1, ValueType::Int64),
                column(2, ValueType::Int64),
            ],
            by_ordinal: true,
            opts: EvalOptions::default(),
        })
    }

    /// `groups` run through a [`TotalsExec`] to the end: how many groups it passed on, and
    /// its totals row's values (all int64 here), if it made one.
    async fn run(
        groups: Arc<dyn ExecutionPlan>,
        totals: Arc<Totals>,
    ) -> (usize, Option<Vec<Value>>) {
        let slot = TotalsSlot::default();
        let exec = TotalsExec::new(groups, totals, slot.clone());
        let passed: Vec<RecordBatch> = exec
            .execute(0, Arc::new(TaskContext::default()))
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let row = slot.lock().unwrap().take().map(|row| {
            (0..row.num_columns())
                .map(|c| {
                    let column = row.column(c).as_ref();
                    dynql_core::arrow_convert::array_value(column, ValueType::Int64, 0)
                })
                .collect()
        });
        (passed.iter().map(RecordBatch::num_rows).sum(), row)
    }

    #[tokio::test]
    async fn the_totals_merge_every_group_in_the_order_they_appeared_and_the_groups_pass() {
        let (passed, row) = run(groups(), totals()).await;
        assert_eq!(passed, 2);
        // Null key; `first` of the totals is the first group's (ordinal 0), the sums add.
        let expected = vec![Value::Null, Value::Int64(10), Value::Int64(7)];
        assert_eq!(row, Some(expected));
    }

    #[tokio::test]
    async fn no_group_gives_no_totals_row() {
        let schema = groups().schema();
        let empty = MemorySourceConfig::try_new_exec(&[vec![]], schema, None).unwrap();
        assert_eq!(run(empty, totals()).await, (0, None));
    }

    #[tokio::test]
    async fn groups_without_ordinals_merge_as_they_come() {
        // `sum` and `max` in two partitions, no ordinal column: what a parallel
        // aggregation WITH TOTALS gives.
        let schema = Arc::new(Schema::new(vec![
            Field::new("g0", DataType::Int64, true),
            Field::new("a0", DataType::Int64, true),
            Field::new("a1", DataType::Int64, true),
        ]));
        let batch = |g: Vec<i64>, sum: Vec<i64>, max: Vec<Option<i64>>| {
            RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int64Array::from(g)),
                    Arc::new(Int64Array::from(sum)),
                    Arc::new(Int64Array::from(max)),
                ],
            )
            .unwrap()
        };
        let partitions = vec![
            vec![batch(vec![1, 2], vec![5, 6], vec![Some(3), None])],
            vec![batch(vec![3], vec![-1], vec![Some(9)])],
        ];
        let groups = MemorySourceConfig::try_new_exec(&partitions, schema, None).unwrap();
        let column = |i, ty| TypedExpr::new(TExpr::Column(i), ty);
        let totals = Arc::new(Totals {
            keys: vec![ValueType::Int64],
            aggregates: vec![
                (
                    StateColumns::Finished(AggregateFunction::Sum),
                    ValueType::Int64,
                ),
                (
                    StateColumns::Finished(AggregateFunction::Max),
                    ValueType::Int64,
                ),
            ],
            projections: vec![
                column(0, ValueType::Int64),
                column(1, ValueType::Int64),
                column(2, ValueType::Int64),
            ],
            by_ordinal: false,
            opts: EvalOptions::default(),
        });
        let (passed, row) = run(groups, totals).await;
        assert_eq!(passed, 3);
        assert_eq!(
            row,
            Some(vec![Value::Null, Value::Int64(10), Value::Int64(9)])
        );
    }
}
