//! A WHERE that reads one byte-string column of a tablet scan, evaluated once per distinct
//! value of each batch: [`DictionaryFilterExec`], which [`DictionaryFilterRule`] puts in
//! place of such a `FilterExec` after asking the scan to give that column as dictionaries.
//!
//! Why: a condition on a low-cardinality string column (`category != "alpha"`,
//! `is_prefix("del", category)`) otherwise expands every row's view and evaluates the YT
//! expression over every row (issue 41: such filters trailed DuckDB). A compacted row
//! group keeps the column as a dictionary of few values; through it, the expression runs
//! over the values the batch's rows use (in the order rows first use them, plus null when
//! a row is null), and each row passes when its value does. A YT expression is a pure
//! function of its arguments, so the rows that pass are the same, and only values some row
//! holds are evaluated, so an expression that fails on a value fails exactly when the row
//! evaluation would, on the same first value.
//!
//! Batches the scan gives as views come as a dictionary of their own rows; those are
//! evaluated row by row as before. The output is the filter's (its projection, the column
//! as views), so nothing above changes.

use std::fmt;
use std::sync::Arc;

use arrow::array::{
    new_empty_array, new_null_array, Array, ArrayRef, AsArray, BooleanArray, UInt32Array,
};
use arrow::buffer::BooleanBuffer;
use arrow::datatypes::{DataType, Field, Int32Type, Schema, SchemaRef};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode, TreeNodeRecursion};
use datafusion::config::ConfigOptions;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::metrics::{
    BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet, RecordOutput,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use futures::StreamExt;

use super::dictionary_groups::scan_giving_dictionaries;
use super::table_scan::byte_string_dictionary;

/// Replaces a `FilterExec` straight over a tablet scan whose predicate reads one column, of
/// byte strings, with a [`DictionaryFilterExec`] over the scan giving that column as
/// dictionaries (see [`scan_giving_dictionaries`]).
#[derive(Debug, Default)]
pub(crate) struct DictionaryFilterRule;

impl PhysicalOptimizerRule for DictionaryFilterRule {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let Some(filter) = node.downcast_ref::<FilterExec>() else {
                return Ok(Transformed::no(node));
            };
            match DictionaryFilterExec::replacing(filter) {
                Some(exec) => Ok(Transformed::yes(Arc::new(exec) as Arc<dyn ExecutionPlan>)),
                None => Ok(Transformed::no(node)),
            }
        })
        .data()
    }

    fn name(&self) -> &str {
        "dictionary_filter"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// A filter evaluated once per distinct value of its one column (see the module docs).
#[derive(Debug)]
pub(crate) struct DictionaryFilterExec {
    /// The scan, giving `column` as dictionaries.
    input: Arc<dyn ExecutionPlan>,
    predicate: Arc<dyn PhysicalExpr>,
    /// The one column the predicate reads.
    column: usize,
    /// The input columns given, in order (the filter's projection).
    projection: Vec<usize>,
    /// The scan's schema as the predicate was planned on it (the column as views), every
    /// field nullable: the distinct values are evaluated in a batch of it whose other
    /// columns are null.
    values_schema: SchemaRef,
    /// The filter's output schema.
    schema: SchemaRef,
    /// The most rows the filter gives (a LIMIT pushed into it).
    fetch: Option<usize>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl DictionaryFilterExec {
    /// The exec that can stand for `filter`, if it qualifies (see [`DictionaryFilterRule`]).
    pub(crate) fn replacing(filter: &FilterExec) -> Option<DictionaryFilterExec> {
        let read = collect_columns(filter.predicate());
        let mut indices = read.iter().map(|c| c.index());
        let column = indices.next()?;
        if indices.any(|c| c != column) {
            return None;
        }
        let scan_schema = filter.input().schema();
        if scan_schema.fields().get(column)?.data_type() != &DataType::BinaryView {
            return None;
        }
        let input = scan_giving_dictionaries(filter.input(), column)?;
        let projection = match filter.projection() {
            Some(p) => p.to_vec(),
            None => (0..scan_schema.fields().len()).collect(),
        };
        let fields: Vec<Field> = scan_schema
            .fields()
            .iter()
            .map(|f| Field::clone(f).with_nullable(true))
            .collect();
        Some(DictionaryFilterExec {
            input,
            predicate: filter.predicate().clone(),
            column,
            projection,
            values_schema: Arc::new(Schema::new(fields)),
            schema: filter.schema(),
            fetch: filter.fetch(),
            properties: filter.properties().clone(),
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }
}

impl DisplayAs for DictionaryFilterExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DictionaryFilterExec: {}, per distinct value of {}@{}",
            self.predicate,
            self.values_schema.field(self.column).name(),
            self.column
        )?;
        if let Some(fetch) = self.fetch {
            write!(f, ", fetch={fetch}")?;
        }
        if self.projection.len() != self.values_schema.fields().len()
            || self.projection.iter().enumerate().any(|(i, &c)| i != c)
        {
            let shown: Vec<String> = self
                .projection
                .iter()
                .map(|&c| format!("{}@{c}", self.values_schema.field(c).name()))
                .collect();
            write!(f, ", projection=[{}]", shown.join(", "))?;
        }
        Ok(())
    }
}

impl ExecutionPlan for DictionaryFilterExec {
    fn name(&self) -> &str {
        "DictionaryFilterExec"
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
        f(&self.predicate)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let [input] = <[_; 1]>::try_from(children)
            .map_err(|_| DataFusionError::Internal("DictionaryFilterExec has one child".into()))?;
        if input.schema() != self.input.schema() {
            return Err(DataFusionError::Internal(
                "DictionaryFilterExec: a new input must keep the schema".into(),
            ));
        }
        Ok(Arc::new(DictionaryFilterExec {
            input,
            predicate: self.predicate.clone(),
            column: self.column,
            projection: self.projection.clone(),
            values_schema: self.values_schema.clone(),
            schema: self.schema.clone(),
            fetch: self.fetch,
            properties: self.properties.clone(),
            metrics: ExecutionPlanMetricsSet::new(),
        }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let filter = BatchFilter {
            predicate: self.predicate.clone(),
            column: self.column,
            projection: self.projection.clone(),
            values_schema: self.values_schema.clone(),
            schema: self.schema.clone(),
        };
        // The stream ends once `fetch` rows are given, or after an error.
        let remaining = self.fetch.unwrap_or(usize::MAX);
        let state = (input, filter, baseline, remaining);
        let batches = futures::stream::unfold(state, |state| async move {
            let (mut input, filter, baseline, remaining) = state;
            if remaining == 0 {
                return None;
            }
            loop {
                let batch = match input.next().await? {
                    Ok(batch) => batch,
                    Err(e) => return Some((Err(e), (input, filter, baseline, 0))),
                };
                let timer = baseline.elapsed_compute().timer();
                let kept = filter.filter(&batch);
                timer.done();
                let kept = match kept {
                    Ok(kept) if kept.num_rows() == 0 => continue,
                    Ok(kept) => kept,
                    Err(e) => return Some((Err(e), (input, filter, baseline, 0))),
                };
                let kept = kept.slice(0, kept.num_rows().min(remaining));
                let remaining = remaining - kept.num_rows();
                let kept = kept.record_output(&baseline);
                return Some((Ok(kept), (input, filter, baseline, remaining)));
            }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            batches,
        )))
    }
}

/// Which rows pass, by their dictionary keys (`keys`) and whether each value passes
/// (`pass`; a key past it, which a valid dictionary has not, does not pass). A table lookup
/// per row, 64 rows to a word, with no branch.
fn rows_passing(keys: &[i32], pass: &[bool]) -> BooleanBuffer {
    // Where at most four values pass, or all but at most four, a row's bit is a few
    // comparisons of its key, which the compiler vectorises; else a lookup per row.
    let keys_of = |p: bool| -> Vec<i32> {
        (0..pass.len() as i32)
            .filter(|&k| pass[k as usize] == p)
            .collect()
    };
    let passing = keys_of(true);
    if passing.is_empty() {
        return BooleanBuffer::new_unset(keys.len());
    }
    if passing.len() <= FEW {
        let [a, b, c, d] = padded(&passing);
        return bits_of(keys, move |k| (k == a) | (k == b) | (k == c) | (k == d));
    }
    let failing = keys_of(false);
    if failing.len() <= FEW {
        let [a, b, c, d] = padded(&failing);
        let n = pass.len() as u32;
        return bits_of(keys, move |k| {
            ((k as u32) < n) & (k != a) & (k != b) & (k != c) & (k != d)
        });
    }
    // Past the values: one more entry, a value that does not pass.
    let mut table: Vec<u8> = pass.iter().map(|&p| u8::from(p)).collect();
    table.push(0);
    let past = pass.len();
    bits_of(keys, |k| table[(k as u32 as usize).min(past)] != 0)
}

/// One bit per key, set where `f` holds, 64 keys to a word (a fixed-size loop the compiler
/// can vectorise).
fn bits_of(keys: &[i32], f: impl Fn(i32) -> bool) -> BooleanBuffer {
    let word = |chunk: &[i32]| {
        chunk
            .iter()
            .enumerate()
            .fold(0u64, |w, (i, &k)| w | (u64::from(f(k)) << i))
    };
    let chunks = keys.chunks_exact(64);
    let rest = chunks.remainder();
    let mut words: Vec<u64> = chunks
        .map(|chunk| {
            let chunk: &[i32; 64] = chunk.try_into().expect("chunks of 64");
            let mut w = 0u64;
            for (i, &k) in chunk.iter().enumerate() {
                w |= u64::from(f(k)) << i;
            }
            w
        })
        .collect();
    if !rest.is_empty() {
        words.push(word(rest));
    }
    BooleanBuffer::new(arrow::buffer::Buffer::from_vec(words), 0, keys.len())
}

/// The most values [`rows_passing`] compares a key with.
const FEW: usize = 4;

/// Up to [`FEW`] keys, the last repeated in the rest (none: -1, no value's key).
fn padded(keys: &[i32]) -> [i32; FEW] {
    let mut four = [keys.last().copied().unwrap_or(-1); FEW];
    four[..keys.len()].copy_from_slice(keys);
    four
}

/// What a partition's stream needs to filter a batch.
struct BatchFilter {
    predicate: Arc<dyn PhysicalExpr>,
    column: usize,
    projection: Vec<usize>,
    values_schema: SchemaRef,
    schema: SchemaRef,
}

impl BatchFilter {
    /// The rows of `batch` that pass, as the filter gives them.
    fn filter(&self, batch: &RecordBatch) -> DfResult<RecordBatch> {
        let column = batch.column(self.column);
        let dictionary = column.as_dictionary_opt::<Int32Type>().ok_or_else(|| {
            DataFusionError::Internal(format!(
                "DictionaryFilterExec was given a column of {}, not {}",
                column.data_type(),
                byte_string_dictionary()
            ))
        })?;
        let keys = dictionary.keys();
        let values = dictionary.values();
        let nulls = keys.nulls().filter(|n| n.null_count() > 0);
        // The values rows use, in the order rows first use them (the scan stops once every
        // value is met, which for a dictionary of few values is within a few rows).
        let mut met = vec![false; values.len()];
        let mut used: Vec<u32> = Vec::new();
        for (i, &k) in keys.values().iter().enumerate() {
            if used.len() == values.len() {
                break;
            }
            if nulls.is_some_and(|n| n.is_null(i)) {
                continue;
            }
            let seen = met.get_mut(k as usize).ok_or_else(|| {
                DataFusionError::Internal("a dictionary key past its values".into())
            })?;
            if !*seen {
                *seen = true;
                used.push(k as u32);
            }
        }
        // The used values, then null where a row is null.
        let indices: UInt32Array = used
            .iter()
            .map(|&k| Some(k))
            .chain(nulls.is_some().then_some(None))
            .collect();
        let distinct = arrow::compute::take(values.as_ref(), &indices, None)?;
        let passed = self.evaluate(distinct)?;
        let passes = |p: usize| passed.is_valid(p) && passed.value(p);
        // Whether each value passes (an unused one never does: no row holds it).
        let mut pass = vec![false; values.len()];
        for (p, &k) in used.iter().enumerate() {
            pass[k as usize] = passes(p);
        }
        let mut mask = rows_passing(keys.values(), &pass);
        // A null row's key slot holds any value: it passes when null does.
        if let Some(nulls) = nulls {
            mask = if passes(used.len()) {
                &mask | &!nulls.inner()
            } else {
                &mask & nulls.inner()
            };
        }
        let passing = mask.count_set_bits();
        if self.projection.is_empty() || passing == 0 {
            // Only the count is wanted (a `sum(1)`, a count), or no row passes.
            return Ok(RecordBatch::try_new_with_options(
                self.schema.clone(),
                self.schema
                    .fields()
                    .iter()
                    .map(|f| new_empty_array(f.data_type()))
                    .collect(),
                &RecordBatchOptions::new().with_row_count(Some(passing)),
            )?);
        }
        let kept = super::keep_rows::keep_rows(batch, &mask, passing)?;
        let columns = self
            .projection
            .iter()
            .map(|&c| {
                let array = kept.column(c);
                if c == self.column {
                    Ok(arrow::compute::cast(array, &DataType::BinaryView)?)
                } else {
                    Ok(array.clone())
                }
            })
            .collect::<DfResult<Vec<ArrayRef>>>()?;
        Ok(RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &RecordBatchOptions::new().with_row_count(Some(kept.num_rows())),
        )?)
    }

    /// The predicate over `distinct` values of the column (the other columns null).
    fn evaluate(&self, distinct: ArrayRef) -> DfResult<BooleanArray> {
        let n = distinct.len();
        let columns: Vec<ArrayRef> = self
            .values_schema
            .fields()
            .iter()
            .enumerate()
            .map(|(c, f)| {
                if c == self.column {
                    distinct.clone()
                } else {
                    new_null_array(f.data_type(), n)
                }
            })
            .collect();
        let values = RecordBatch::try_new_with_options(
            self.values_schema.clone(),
            columns,
            &RecordBatchOptions::new().with_row_count(Some(n)),
        )?;
        let passed = self.predicate.evaluate(&values)?.into_array(n)?;
        passed.as_boolean_opt().cloned().ok_or_else(|| {
            DataFusionError::Internal(format!(
                "a filter's predicate gave {}, not booleans",
                passed.data_type()
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The rows that pass are those whose key's value passes; keys past the values (or
        /// negative) never do.
        #[test]
        fn rows_pass_by_their_keys_value(
            pass in proptest::collection::vec(proptest::bool::ANY, 0..20),
            keys in proptest::collection::vec(
                proptest::prop_oneof![-2i32..24, proptest::strategy::Just(i32::MAX), proptest::strategy::Just(i32::MIN)],
                0..300,
            ),
        ) {
            let mask = rows_passing(&keys, &pass);
            proptest::prop_assert_eq!(mask.len(), keys.len());
            for (i, &k) in keys.iter().enumerate() {
                let expected = usize::try_from(k).ok().and_then(|k| pass.get(k)).copied().unwrap_or(false);
                proptest::prop_assert_eq!(mask.value(i), expected, "row {}", i);
            }
        }
    }
}
