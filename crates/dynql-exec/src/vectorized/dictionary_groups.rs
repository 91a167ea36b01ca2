//! The partial aggregation of a GROUP BY on one byte-string column that comes straight from
//! a tablet scan, found through the column's dictionary: [`DictionaryGroupsExec`], which
//! [`DictionaryGroupsRule`] puts in place of DataFusion's partial `AggregateExec` after
//! asking the scan to give that column as dictionaries.
//!
//! Why: compacted row groups hold a low-cardinality string column (a category, a status)
//! as a dictionary, and the chunk cache keeps it so. DataFusion's partial aggregation wants
//! views: the scan expanded every row's view (a gather of 16 bytes per row) and the
//! aggregation then hashed and compared every row's bytes to find its group; together a
//! fifth to a third of a `GROUP BY category` (issue 41). Through the dictionary, each
//! distinct value of a batch is looked up once and each row's group is its key's.
//!
//! Batches the scan gives as views (rows merged from versions, unflushed rows, row groups
//! of many distinct values) come as a dictionary of their own rows, so every value is
//! looked up as before, by its 16-byte view where the value fits in it.
//!
//! The aggregates are DataFusion's own `GroupsAccumulator`s (YT's UDAFs among them), fed as
//! `AggregateExec` feeds them, and the output is the partial aggregation's (the group
//! column as views, then each aggregate's state), so the final aggregation above is
//! unchanged. A partial aggregation may emit its groups at any time: past [`MAX_GROUPS`]
//! groups, or when the memory pool grants no more, the groups so far are emitted and the
//! table starts again, so memory stays bounded whatever the cardinality.

use std::fmt;
use std::hash::BuildHasher;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BinaryViewArray, BinaryViewBuilder, BooleanArray};
use arrow::datatypes::{DataType, Int32Type, SchemaRef};
use arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode, TreeNodeRecursion};
use datafusion::config::ConfigOptions;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{EmitTo, GroupsAccumulator};
use datafusion::physical_expr::aggregate::AggregateFunctionExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::execution_plan::{ChildrenPropertiesMode, ReplaceChildrenOptions};
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::metrics::{
    BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet, RecordOutput,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties,
};
use futures::StreamExt;

use super::table_scan::{byte_string_dictionary, TabletScanExec};

/// Groups held before they are emitted and the table starts again (a partial aggregation's
/// output is merged by the final one, so emitting early changes no result).
pub(crate) const MAX_GROUPS: usize = 1 << 16;

/// Replaces a partial `AggregateExec` grouped by one byte-string column (views) of a
/// [`TabletScanExec`] (directly below it, or below a filter that does not read the column),
/// whose aggregates neither read that column nor need anything but group indices (no
/// DISTINCT, no ORDER BY inside), with a [`DictionaryGroupsExec`] over the same scan giving
/// the column as dictionaries.
#[derive(Debug, Default)]
pub(crate) struct DictionaryGroupsRule;

impl PhysicalOptimizerRule for DictionaryGroupsRule {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let Some(aggregate) = node.downcast_ref::<AggregateExec>() else {
                return Ok(Transformed::no(node));
            };
            let replaced = if *aggregate.mode() == AggregateMode::Single {
                split_single(aggregate)?
            } else {
                DictionaryGroupsExec::replacing(aggregate)?
                    .map(|exec| Arc::new(exec) as Arc<dyn ExecutionPlan>)
            };
            match replaced {
                Some(exec) => Ok(Transformed::yes(exec)),
                None => Ok(Transformed::no(node)),
            }
        })
        .data()
    }

    fn name(&self) -> &str {
        "dictionary_groups"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// A one-partition aggregation (`Single` mode, over a scan of one partition) as a
/// [`DictionaryGroupsExec`] under a final `AggregateExec`, if the partial half qualifies.
fn split_single(aggregate: &AggregateExec) -> DfResult<Option<Arc<dyn ExecutionPlan>>> {
    if aggregate.limit_options().is_some()
        || aggregate.input().output_partitioning().partition_count() != 1
    {
        return Ok(None);
    }
    let partial = AggregateExec::try_new(
        AggregateMode::Partial,
        aggregate.group_expr().clone(),
        aggregate.aggr_expr().to_vec(),
        aggregate.filter_expr().to_vec(),
        aggregate.input().clone(),
        aggregate.input_schema(),
    )?;
    let Some(partial) = DictionaryGroupsExec::replacing(&partial)? else {
        return Ok(None);
    };
    let last = AggregateExec::try_new(
        AggregateMode::Final,
        aggregate.group_expr().as_final(),
        aggregate.aggr_expr().to_vec(),
        vec![None; aggregate.aggr_expr().len()],
        Arc::new(partial),
        aggregate.input_schema(),
    )?;
    // The split must give what the one aggregation gave, field for field.
    if last.schema() != aggregate.schema() {
        return Ok(None);
    }
    Ok(Some(Arc::new(last)))
}

/// `plan` giving its column `column` as dictionaries, where `plan` is a tablet scan
/// (possibly wrapped for cooperative scheduling) that can: see
/// [`TabletScanExec::with_dictionary_columns`].
pub(crate) fn scan_giving_dictionaries(
    plan: &Arc<dyn ExecutionPlan>,
    column: usize,
) -> Option<Arc<dyn ExecutionPlan>> {
    if let Some(scan) = plan.downcast_ref::<TabletScanExec>() {
        return Some(Arc::new(scan.with_dictionary_columns(&[column])?));
    }
    let wrapped = plan.downcast_ref::<CooperativeExec>()?;
    let scan = scan_giving_dictionaries(wrapped.input(), column)?;
    Some(Arc::new(CooperativeExec::new(scan)))
}

/// `plan` giving its column `column` as dictionaries: a tablet scan asked to
/// ([`scan_giving_dictionaries`]), or a filter that does not read the column over such a
/// plan. `None` for anything else.
fn giving_dictionaries(
    plan: &Arc<dyn ExecutionPlan>,
    column: usize,
) -> DfResult<Option<Arc<dyn ExecutionPlan>>> {
    if let Some(scan) = scan_giving_dictionaries(plan, column) {
        return Ok(Some(scan));
    }
    if let Some(filter) = plan.downcast_ref::<FilterExec>() {
        let reads = collect_columns(filter.predicate())
            .iter()
            .any(|c| c.index() == column);
        if filter.projection().is_some() || reads {
            return Ok(None);
        }
        let Some(input) = giving_dictionaries(filter.input(), column)? else {
            return Ok(None);
        };
        // The filter's schema (and so its properties) follows its input's.
        let recompute = ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute);
        return plan
            .clone()
            .replace_children(vec![input], recompute)
            .map(Some);
    }
    Ok(None)
}

/// A partial aggregation by one byte-string column given as dictionaries (see the module
/// docs).
#[derive(Debug)]
pub(crate) struct DictionaryGroupsExec {
    input: Arc<dyn ExecutionPlan>,
    /// The grouped column of the input, and its name in the output.
    key: usize,
    key_name: String,
    aggregates: Vec<Arc<AggregateFunctionExpr>>,
    filters: Vec<Option<Arc<dyn PhysicalExpr>>>,
    /// The partial aggregation's output schema (group column, then the states).
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl DictionaryGroupsExec {
    /// The exec that can stand for `aggregate`, if it qualifies (see
    /// [`DictionaryGroupsRule`]).
    pub(crate) fn replacing(aggregate: &AggregateExec) -> DfResult<Option<DictionaryGroupsExec>> {
        if *aggregate.mode() != AggregateMode::Partial
            || aggregate.limit_options().is_some()
            || !aggregate.dynamic_expressions_produced().is_empty()
        {
            return Ok(None);
        }
        let group = aggregate.group_expr();
        if group.has_grouping_set() || group.expr().len() != 1 {
            return Ok(None);
        }
        let (expr, name) = &group.expr()[0];
        let Some(column) = expr.downcast_ref::<Column>() else {
            return Ok(None);
        };
        let key = column.index();
        let input = aggregate.input();
        let input_schema = input.schema();
        let schema = aggregate.schema();
        let views = |t: &DataType| t == &DataType::BinaryView;
        if !input_schema
            .fields()
            .get(key)
            .is_some_and(|f| views(f.data_type()))
            || !views(schema.field(0).data_type())
        {
            return Ok(None);
        }
        let plain = aggregate.aggr_expr().iter().all(|a| {
            !a.is_distinct() && a.order_bys().is_empty() && a.groups_accumulator_supported()
        });
        let reads_key = aggregate
            .aggr_expr()
            .iter()
            .flat_map(|a| a.expressions())
            .chain(aggregate.filter_expr().iter().flatten().cloned())
            .any(|e| collect_columns(&e).iter().any(|c| c.index() == key));
        if !plain || reads_key {
            return Ok(None);
        }
        let Some(input) = giving_dictionaries(input, key)? else {
            return Ok(None);
        };
        Ok(Some(DictionaryGroupsExec {
            input,
            key,
            key_name: name.clone(),
            aggregates: aggregate.aggr_expr().to_vec(),
            filters: aggregate.filter_expr().to_vec(),
            schema,
            properties: aggregate.properties().clone(),
            metrics: ExecutionPlanMetricsSet::new(),
        }))
    }
}

impl DisplayAs for DictionaryGroupsExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // As `AggregateExec` shows them: `sum(c) as a0`.
        let aggregates: Vec<String> = self
            .aggregates
            .iter()
            .map(|a| match (a.human_display(), a.human_display_alias()) {
                (Some(shown), Some(alias)) => format!("{shown} as {alias}"),
                (Some(shown), None) => shown.to_string(),
                (None, _) => a.name().to_string(),
            })
            .collect();
        write!(
            f,
            "DictionaryGroupsExec: mode=Partial, gby=[{}@{} as {}], aggr=[{}]",
            self.input.schema().field(self.key).name(),
            self.key,
            self.key_name,
            aggregates.join(", ")
        )
    }
}

impl ExecutionPlan for DictionaryGroupsExec {
    fn name(&self) -> &str {
        "DictionaryGroupsExec"
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
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        let key: Arc<dyn PhysicalExpr> = Arc::new(Column::new(
            self.input.schema().field(self.key).name(),
            self.key,
        ));
        let mut recursion = f(&key)?;
        for expr in self
            .aggregates
            .iter()
            .flat_map(|a| a.expressions())
            .chain(self.filters.iter().flatten().cloned())
        {
            if recursion == TreeNodeRecursion::Stop {
                break;
            }
            recursion = f(&expr)?;
        }
        Ok(recursion)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let [input] = <[_; 1]>::try_from(children)
            .map_err(|_| DataFusionError::Internal("DictionaryGroupsExec has one child".into()))?;
        if input.schema() != self.input.schema() {
            return Err(DataFusionError::Internal(
                "DictionaryGroupsExec: a new input must keep the schema".into(),
            ));
        }
        Ok(Arc::new(DictionaryGroupsExec {
            input,
            key: self.key,
            key_name: self.key_name.clone(),
            aggregates: self.aggregates.clone(),
            filters: self.filters.clone(),
            schema: self.schema.clone(),
            properties: self.properties.clone(),
            metrics: ExecutionPlanMetricsSet::new(),
        }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context.clone())?;
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let reservation = MemoryConsumer::new(format!("DictionaryGroupsExec[{partition}]"))
            .with_can_spill(false)
            .register(context.memory_pool());
        let state = Aggregation {
            input,
            key: self.key,
            aggregates: self.aggregates.clone(),
            filters: self.filters.clone(),
            schema: self.schema.clone(),
            groups: Groups::new(),
            accumulators: accumulators(&self.aggregates)?,
            value_groups: Vec::new(),
            reservation,
            baseline,
            done: false,
        };
        let stream = futures::stream::unfold(state, |mut state| async move {
            let next = state.next().await;
            next.map(|batch| (batch, state))
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            stream,
        )))
    }
}

fn accumulators(
    aggregates: &[Arc<AggregateFunctionExpr>],
) -> DfResult<Vec<Box<dyn GroupsAccumulator>>> {
    aggregates
        .iter()
        .map(|a| a.create_groups_accumulator())
        .collect()
}

/// One partition's aggregation in progress.
struct Aggregation {
    input: SendableRecordBatchStream,
    key: usize,
    aggregates: Vec<Arc<AggregateFunctionExpr>>,
    filters: Vec<Option<Arc<dyn PhysicalExpr>>>,
    schema: SchemaRef,
    groups: Groups,
    accumulators: Vec<Box<dyn GroupsAccumulator>>,
    /// The group of each dictionary value of the batch being added (reused).
    value_groups: Vec<usize>,
    reservation: MemoryReservation,
    baseline: BaselineMetrics,
    done: bool,
}

impl Aggregation {
    /// The next output batch: the groups, once the input ends or the table is full.
    async fn next(&mut self) -> Option<DfResult<RecordBatch>> {
        if self.done {
            return None;
        }
        loop {
            match self.input.next().await {
                Some(Ok(batch)) => {
                    let elapsed = self.baseline.elapsed_compute().clone();
                    let timer = elapsed.timer();
                    let full = self.aggregate(&batch);
                    timer.done();
                    match full {
                        Ok(false) => {}
                        Ok(true) => return Some(self.emit()),
                        Err(e) => return Some(Err(e)),
                    }
                }
                Some(Err(e)) => return Some(Err(e)),
                None => {
                    self.done = true;
                    if self.groups.len() == 0 {
                        return None;
                    }
                    return Some(self.emit());
                }
            }
        }
    }

    /// Adds `batch` to the groups; whether they should be emitted now.
    fn aggregate(&mut self, batch: &RecordBatch) -> DfResult<bool> {
        let rows = batch.num_rows();
        let column = batch.column(self.key);
        let dictionary = column.as_dictionary_opt::<Int32Type>().ok_or_else(|| {
            DataFusionError::Internal(format!(
                "DictionaryGroupsExec was given a column of {}, not {}",
                column.data_type(),
                byte_string_dictionary()
            ))
        })?;
        let values = dictionary.values().as_binary_view_opt().ok_or_else(|| {
            DataFusionError::Internal(
                "DictionaryGroupsExec was given a dictionary of other values".into(),
            )
        })?;
        // Each value's group, found when a row first uses it: a value no row holds (a
        // filter above the scan dropped its rows, or a sliced dictionary) makes no group.
        self.value_groups.clear();
        self.value_groups.resize(values.len(), usize::MAX);
        let mut indices = Vec::with_capacity(rows);
        let keys = dictionary.keys();
        let nulls = keys.nulls().filter(|n| n.null_count() > 0);
        for (i, &k) in keys.values().iter().enumerate() {
            if nulls.is_some_and(|n| n.is_null(i)) {
                indices.push(self.groups.null_group());
                continue;
            }
            let group = self.value_groups.get_mut(k as usize).ok_or_else(|| {
                DataFusionError::Internal("a dictionary key past its values".into())
            })?;
            if *group == usize::MAX {
                *group = self.groups.group_of(values, k as usize);
            }
            indices.push(*group);
        }
        let total = self.groups.len();
        for ((aggregate, filter), accumulator) in self
            .aggregates
            .iter()
            .zip(&self.filters)
            .zip(&mut self.accumulators)
        {
            let values = aggregate
                .expressions()
                .iter()
                .map(|e| e.evaluate(batch).and_then(|v| v.into_array(rows)))
                .collect::<DfResult<Vec<ArrayRef>>>()?;
            let filter = match filter {
                Some(f) => Some(f.evaluate(batch)?.into_array(rows)?),
                None => None,
            };
            let filter = match &filter {
                Some(f) => Some(f.as_any().downcast_ref::<BooleanArray>().ok_or_else(|| {
                    DataFusionError::Internal("an aggregate's FILTER is not boolean".into())
                })?),
                None => None,
            };
            accumulator.update_batch(&values, &indices, filter, total)?;
        }
        let size = self.groups.size() + self.accumulators.iter().map(|a| a.size()).sum::<usize>();
        let granted = self.reservation.try_resize(size).is_ok();
        Ok(self.groups.len() >= MAX_GROUPS || !granted)
    }

    /// The groups so far as one batch of the partial aggregation's schema; the table and
    /// accumulators start again.
    fn emit(&mut self) -> DfResult<RecordBatch> {
        let groups = std::mem::replace(&mut self.groups, Groups::new());
        let mut columns: Vec<ArrayRef> = vec![Arc::new(groups.into_array())];
        for accumulator in &mut self.accumulators {
            columns.extend(accumulator.state(EmitTo::All)?);
        }
        self.accumulators = accumulators(&self.aggregates)?;
        self.reservation.free();
        let batch = RecordBatch::try_new(self.schema.clone(), columns)?;
        Ok(batch.record_output(&self.baseline))
    }
}

/// The groups met so far, each by its value's code: a value of at most 12 bytes by its
/// whole view (length and bytes), a longer one by its hash and length (whose low 32 bits,
/// the length, are above 12, so it never equals a short value's code) and then its bytes.
struct Groups {
    /// Open addressing: a power of two long, at most half full; each slot holds a code and
    /// its group ([`EMPTY`] where none), so a probe compares codes without an indirection.
    slots: Vec<Slot>,
    /// Per group: its code, and where a long value's bytes are in `bytes`.
    codes: Vec<u128>,
    long: Vec<Option<(usize, usize)>>,
    bytes: Vec<u8>,
    /// The group of null, in no slot.
    null_group: Option<usize>,
}

#[derive(Clone, Copy)]
struct Slot {
    code: u128,
    group: u32,
}

const EMPTY: u32 = u32::MAX;

const NO_SLOT: Slot = Slot {
    code: 0,
    group: EMPTY,
};

/// The slot a code hashes to in a table of `1 << bits` slots: Fibonacci hashing, whose
/// top bits depend on every bit of the code (the low bits of a short value's view are
/// mostly its length).
#[inline]
fn slot_of(code: u128, bits: u32) -> usize {
    let mixed = (code as u64) ^ ((code >> 64) as u64).rotate_left(29);
    (mixed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
}

impl Groups {
    fn new() -> Groups {
        Groups {
            slots: vec![NO_SLOT; 64],
            codes: Vec::new(),
            long: Vec::new(),
            bytes: Vec::new(),
            null_group: None,
        }
    }

    fn len(&self) -> usize {
        self.codes.len()
    }

    /// Bytes held.
    fn size(&self) -> usize {
        self.slots.len() * std::mem::size_of::<Slot>()
            + self.codes.len() * (16 + std::mem::size_of::<Option<(usize, usize)>>())
            + self.bytes.len()
    }

    /// The group of value `i` of `values`, added if new.
    fn group_of(&mut self, values: &BinaryViewArray, i: usize) -> usize {
        if values.is_null(i) {
            return self.null_group();
        }
        let view = values.views()[i];
        if (view as u32) <= 12 {
            self.inline_group(view)
        } else {
            self.long_group(values.value(i))
        }
    }

    /// The group of each value of `values` into `groups`, adding groups as met (as
    /// [`Groups::group_of`] of each in turn).
    #[cfg(test)]
    fn find_views(&mut self, values: &BinaryViewArray, groups: &mut Vec<usize>) {
        for i in 0..values.len() {
            groups.push(self.group_of(values, i));
        }
    }

    fn null_group(&mut self) -> usize {
        if let Some(g) = self.null_group {
            return g;
        }
        let g = self.push(0, None);
        self.null_group = Some(g);
        g
    }

    fn push(&mut self, code: u128, long: Option<(usize, usize)>) -> usize {
        let g = self.codes.len();
        self.codes.push(code);
        self.long.push(long);
        g
    }

    /// The group of a value of at most 12 bytes, by its view.
    #[inline]
    fn inline_group(&mut self, code: u128) -> usize {
        let mask = self.slots.len() - 1;
        let mut s = slot_of(code, self.slots.len().trailing_zeros());
        loop {
            let slot = self.slots[s];
            if slot.group == EMPTY {
                let g = self.push(code, None);
                self.slots[s] = Slot {
                    code,
                    group: g as u32,
                };
                self.grow_if_half_full();
                return g;
            }
            if slot.code == code {
                return slot.group as usize;
            }
            s = (s + 1) & mask;
        }
    }

    /// The group of a value longer than 12 bytes.
    fn long_group(&mut self, bytes: &[u8]) -> usize {
        let hash = foldhash::fast::FixedState::with_seed(0x5eed).hash_one(bytes);
        let code = ((hash as u128) << 64) | bytes.len() as u128;
        let mask = self.slots.len() - 1;
        let mut s = slot_of(code, self.slots.len().trailing_zeros());
        loop {
            let slot = self.slots[s];
            if slot.group == EMPTY {
                let start = self.bytes.len();
                self.bytes.extend_from_slice(bytes);
                let g = self.push(code, Some((start, bytes.len())));
                self.slots[s] = Slot {
                    code,
                    group: g as u32,
                };
                self.grow_if_half_full();
                return g;
            }
            if slot.code == code {
                let g = slot.group as usize;
                if let Some((start, len)) = self.long[g] {
                    if &self.bytes[start..start + len] == bytes {
                        return g;
                    }
                }
            }
            s = (s + 1) & mask;
        }
    }

    fn grow_if_half_full(&mut self) {
        if self.codes.len() * 2 < self.slots.len() {
            return;
        }
        let size = self.slots.len() * 2;
        let mask = size - 1;
        let bits = size.trailing_zeros();
        let mut slots = vec![NO_SLOT; size];
        for slot in self.slots.iter().filter(|s| s.group != EMPTY) {
            let mut s = slot_of(slot.code, bits);
            while slots[s].group != EMPTY {
                s = (s + 1) & mask;
            }
            slots[s] = *slot;
        }
        self.slots = slots;
    }

    /// The groups' values, in group order.
    fn into_array(self) -> BinaryViewArray {
        let mut builder = BinaryViewBuilder::with_capacity(self.len());
        for g in 0..self.len() {
            if Some(g) == self.null_group {
                builder.append_null();
                continue;
            }
            match self.long[g] {
                Some((start, len)) => builder.append_value(&self.bytes[start..start + len]),
                None => {
                    // A short value's view: its length in the low 4 bytes, its bytes after.
                    let view = self.codes[g].to_le_bytes();
                    let len = u32::from_le_bytes([view[0], view[1], view[2], view[3]]) as usize;
                    builder.append_value(&view[4..4 + len]);
                }
            }
        }
        builder.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;

    /// The groups of `values` by a simple model: the first row of each distinct value.
    fn model(values: &[Option<String>]) -> (Vec<usize>, Vec<Option<String>>) {
        let mut distinct: Vec<Option<String>> = Vec::new();
        let indices = values
            .iter()
            .map(|v| match distinct.iter().position(|d| d == v) {
                Some(g) => g,
                None => {
                    distinct.push(v.clone());
                    distinct.len() - 1
                }
            })
            .collect();
        (indices, distinct)
    }

    proptest::proptest! {
        /// Values short and long (a long pair differing in its last byte), with nulls, over
        /// several batches and enough distinct values to grow the table: every value gets
        /// the group of its first occurrence, and the groups' values come back in order.
        #[test]
        fn groups_of_views_match_a_model(
            batches in proptest::collection::vec(
                proptest::collection::vec(
                    proptest::option::weighted(0.9, proptest::prop_oneof![
                        proptest::sample::select(vec![
                            "", "a", "beta", "twelve bytes", "thirteen byte",
                            "a much longer string value", "a much longer string valuf", "é",
                        ]).prop_map(str::to_string),
                        (0u32..200).prop_map(|n| format!("value number {n}")),
                        (0u32..200).prop_map(|n| n.to_string()),
                    ]),
                    0..60,
                ),
                1..4,
            ),
        ) {
            let mut groups = Groups::new();
            let mut found = Vec::new();
            let mut all = Vec::new();
            for b in &batches {
                let array: BinaryViewArray =
                    b.iter().map(|v| v.as_deref().map(str::as_bytes)).collect();
                groups.find_views(&array, &mut found);
                all.extend(b.iter().cloned());
            }
            let (expected, distinct) = model(&all);
            proptest::prop_assert_eq!(found, expected);
            let values = groups.into_array();
            let got: Vec<Option<String>> = values
                .iter()
                .map(|v| v.map(|b| String::from_utf8(b.to_vec()).unwrap()))
                .collect();
            proptest::prop_assert_eq!(got, distinct);
        }
    }
}
