//! A lowered plan's result as it is computed: batches in the result's Arrow schema (YT's
//! wire types; `utf8` columns as `Utf8`), YT's output row limit applied as rows arrive, and
//! the statistics once the last batch is out.
//!
//! A run that may not cut rows (`fail_on_incomplete_result` unset, not in scan order) cannot
//! hand rows on before it knows no limit is passed: [`Results::drain`] runs it to its end
//! first, and it is repeated in scan order when a limit is passed (see [`super::lower`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use arrow::array::ArrayRef;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::error::DataFusionError;
use datafusion::physical_plan::SendableRecordBatchStream;
use futures::stream::BoxStream;
use futures::StreamExt;

use dynql_core::arrow_convert::{arrow_type, YT_TYPE_KEY};
use dynql_core::{LogicalType, ValueType};
use dynql_ql::plan::QueryPlan;
use dynql_ql::texpr::TExpr;

use super::input::Input;
use super::lower::{query_error, wire_columns};
use super::stages::Stages;
use super::totals::TotalsSlot;
use crate::error::{Error, Result};
use crate::select::Statistics;

/// What [`Results::next`] gives.
pub(crate) enum Pulled {
    Batch(RecordBatch),
    /// A row limit was passed in a run that may neither fail nor cut: run again in scan order.
    Rerun,
    /// The last batch is out.
    End(Statistics),
}

/// The result of one run of a lowered plan, pulled a batch at a time.
pub(crate) struct Results {
    /// The projected rows; `None` once they are all out or cut.
    rows: Option<SendableRecordBatchStream>,
    /// WITH TOTALS: where the totals row, projected, is once the groups are in; given after
    /// the rows.
    totals: Option<TotalsSlot>,
    schema: SchemaRef,
    types: Vec<ValueType>,
    input: Input,
    /// Where each result column is among the rows' columns, when not one for one.
    column_map: Option<Vec<usize>>,
    output_row_limit: u64,
    fail: bool,
    truncate: bool,
    /// Set when groups or rows were cut at the output row limit.
    cut: Arc<AtomicBool>,
    written: u64,
    stages: Stages,
}

/// How a run treats YT's row limits.
pub(crate) struct Limits {
    pub(crate) output_row_limit: u64,
    /// `fail_on_incomplete_result`.
    pub(crate) fail: bool,
    /// The run is in scan order and cuts the rows at a limit.
    pub(crate) truncate: bool,
}

impl Results {
    pub(super) fn new(
        plan: &QueryPlan,
        rows: SendableRecordBatchStream,
        totals: Option<TotalsSlot>,
        input: Input,
        limits: Limits,
        cut: Arc<AtomicBool>,
        stages: Stages,
    ) -> Results {
        Results {
            rows: Some(rows),
            totals,
            schema: result_schema(plan),
            types: plan.projections.iter().map(|p| p.expr.ty).collect(),
            input,
            column_map: None,
            output_row_limit: limits.output_row_limit,
            fail: limits.fail,
            truncate: limits.truncate,
            cut,
            written: 0,
            stages,
        }
    }

    /// Takes result column `i` from column `map[i]` of the rows (a plan that computes each
    /// distinct output once); `None` keeps them one for one.
    pub(super) fn with_column_map(mut self, map: Option<Vec<usize>>) -> Results {
        self.column_map = map;
        self
    }

    /// The result's columns as Arrow fields.
    pub(crate) fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The physical plans the run executes.
    pub(crate) fn stages(&self) -> Stages {
        self.stages.clone()
    }

    /// Whether rows can be handed on as they come: the run fails or cuts at a row limit
    /// rather than needing to be repeated.
    pub(crate) fn streams(&self) -> bool {
        self.fail || self.truncate
    }

    /// The next batch of the result (never empty), the end, or a request to run again.
    pub(crate) async fn next(&mut self) -> Result<Pulled> {
        loop {
            let next = match self.rows.as_mut() {
                Some(rows) => rows.next().await,
                None => None,
            };
            let batch = match next {
                Some(Ok(batch)) => batch,
                Some(Err(e)) => {
                    self.rows = None;
                    let may_rerun = !self.truncate && !self.fail;
                    return match self.input.exceeded() {
                        Some(_) if may_rerun => Ok(Pulled::Rerun),
                        Some(limit) if !self.truncate => Err(limit),
                        _ => match query_error(e) {
                            // More groups than the output row limit (`GroupLimitExec`).
                            Error::LimitExceeded { what: "output" } if may_rerun => {
                                Ok(Pulled::Rerun)
                            }
                            e => Err(e),
                        },
                    };
                }
                None => {
                    // The plan (and its scans' channels) is dropped before the statistics
                    // wait for the reading tasks.
                    self.rows = None;
                    let totals = self
                        .totals
                        .take()
                        .and_then(|slot| slot.lock().unwrap_or_else(|p| p.into_inner()).take());
                    match totals {
                        Some(totals) => totals,
                        None => return Ok(Pulled::End(self.finish().await)),
                    }
                }
            };
            if batch.num_rows() == 0 {
                continue;
            }
            let batch = self.in_result_schema(&batch)?;
            let room = self.output_row_limit - self.written;
            if batch.num_rows() as u64 <= room {
                self.written += batch.num_rows() as u64;
                return Ok(Pulled::Batch(batch));
            }
            if self.fail {
                return Err(Error::LimitExceeded { what: "output" });
            }
            if !self.truncate {
                return Ok(Pulled::Rerun);
            }
            // YT keeps the rows up to the limit in scan order.
            self.rows = None;
            self.totals = None;
            self.cut.store(true, Ordering::Relaxed);
            if room == 0 {
                continue;
            }
            self.written += room;
            return Ok(Pulled::Batch(batch.slice(0, room as usize)));
        }
    }

    /// The batches as a stream that ends after the last one or the first error, the
    /// statistics put in `statistics` at the end. For a run that [`Results::streams`].
    pub(crate) fn into_stream(
        self,
        statistics: Arc<Mutex<Option<Statistics>>>,
    ) -> BoxStream<'static, Result<RecordBatch>> {
        futures::stream::unfold(Some(self), move |state| {
            let statistics = statistics.clone();
            async move {
                let mut results = state?;
                match results.next().await {
                    Ok(Pulled::Batch(batch)) => Some((Ok(batch), Some(results))),
                    Ok(Pulled::End(end)) => {
                        *statistics.lock().unwrap_or_else(|p| p.into_inner()) = Some(end);
                        None
                    }
                    Ok(Pulled::Rerun) => Some((
                        Err(Error::DataFusion(DataFusionError::Internal(
                            "a streamed run passed a row limit it can neither fail at nor cut"
                                .into(),
                        ))),
                        None,
                    )),
                    Err(e) => Some((Err(e), None)),
                }
            }
        })
        .boxed()
    }

    /// Runs to the end, keeping the batches; `None` when the run has to be repeated.
    pub(crate) async fn drain(&mut self) -> Result<Option<(Vec<RecordBatch>, Statistics)>> {
        let mut batches = Vec::new();
        loop {
            match self.next().await? {
                Pulled::Batch(b) => batches.push(b),
                Pulled::Rerun => return Ok(None),
                Pulled::End(statistics) => return Ok(Some((batches, statistics))),
            }
        }
    }

    async fn finish(&mut self) -> Statistics {
        let mut statistics = self.input.statistics().await;
        statistics.rows_written = self.written;
        statistics.incomplete_output |= self.cut.load(Ordering::Relaxed);
        statistics
    }

    /// `batch` in the result's schema: its wire types, `utf8` columns as checked `Utf8`.
    fn in_result_schema(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let spread;
        let batch = match &self.column_map {
            Some(map) => {
                let columns = map.iter().map(|&c| batch.column(c).clone()).collect();
                let fields: Vec<Field> = map
                    .iter()
                    .map(|&c| batch.schema().field(c).clone())
                    .collect();
                spread = RecordBatch::try_new_with_options(
                    Arc::new(Schema::new(fields)),
                    columns,
                    &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
                )
                .map_err(DataFusionError::from)?;
                &spread
            }
            None => batch,
        };
        let columns = wire_columns(batch, &self.types)?
            .iter()
            .zip(self.schema.fields())
            .map(|(c, f)| utf8_column(c, f))
            .collect::<Result<Vec<_>>>()?;
        Ok(RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
        )
        .map_err(DataFusionError::from)?)
    }
}

/// A byte-string column as `Utf8` where the result field is `Utf8` (a `utf8` column),
/// failing on a value that is not valid UTF-8.
fn utf8_column(column: &ArrayRef, field: &Field) -> Result<ArrayRef> {
    if field.data_type() != &DataType::Utf8 || column.data_type() == &DataType::Utf8 {
        return Ok(column.clone());
    }
    let options = arrow::compute::CastOptions {
        safe: false,
        ..Default::default()
    };
    arrow::compute::cast_with_options(column, &DataType::Utf8, &options).map_err(|e| {
        Error::DataFusion(DataFusionError::Execution(format!(
            "column {:?} of type utf8 holds a value that is not valid UTF-8: {e}",
            field.name()
        )))
    })
}

/// The result's Arrow schema: one field per output column, named as it, of its wire type's
/// Arrow type, with the YT type in the field's metadata. An output column that is a `utf8`
/// table column (directly or as a group key) is `Utf8`.
pub(crate) fn result_schema(plan: &QueryPlan) -> SchemaRef {
    let fields: Vec<Field> = plan
        .projections
        .iter()
        .map(|p| {
            let logical = source_column(plan, &p.expr.kind).map(|c| c.logical_type);
            let data_type = match logical {
                Some(LogicalType::Utf8) => DataType::Utf8,
                _ => arrow_type(p.expr.ty),
            };
            let name = logical.map_or(p.expr.ty.name(), LogicalType::name);
            Field::new(&p.name, data_type, true).with_metadata(
                [(YT_TYPE_KEY.to_string(), name.to_string())]
                    .into_iter()
                    .collect(),
            )
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// The table column an output expression is, if it is one: a column of the joined row, or
/// a group key that is one.
fn source_column<'a>(plan: &'a QueryPlan, expr: &TExpr) -> Option<&'a dynql_core::ColumnSchema> {
    let TExpr::Column(mut index) = expr else {
        return None;
    };
    if let Some(group) = &plan.group {
        let TExpr::Column(key) = group.keys.get(index)?.kind else {
            return None;
        };
        index = key;
    }
    plan.sources.iter().find_map(|s| {
        let columns = s.schema.columns();
        index.checked_sub(s.offset).and_then(|i| columns.get(i))
    })
}
