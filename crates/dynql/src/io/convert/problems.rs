//! The problems of a batch's rows while it is converted, and the input shown with each
//! rejected row.

use arrow::array::{new_null_array, ArrayRef};
use arrow::compute::{cast_with_options, CastOptions};
use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;
use dynql_core::ValueType;

use super::column::normalize;

/// The problems of a batch's rows, by row. Nothing is allocated while no row has one: the
/// usual batch is converted column by column without a pass over its rows.
pub(super) struct RowProblems {
    pub(super) rows: usize,
    /// Empty until the first problem; then one entry per row.
    by_row: Vec<Vec<String>>,
}

impl RowProblems {
    pub(super) fn new(rows: usize) -> RowProblems {
        RowProblems {
            rows,
            by_row: Vec::new(),
        }
    }

    pub(super) fn push(&mut self, row: usize, problem: String) {
        if self.by_row.is_empty() {
            self.by_row = vec![Vec::new(); self.rows];
        }
        self.by_row[row].push(problem);
    }

    /// The same problem for every row.
    pub(super) fn push_all(&mut self, problem: String) {
        for row in 0..self.rows {
            self.push(row, problem.clone());
        }
    }

    pub(super) fn is_ok(&self, row: usize) -> bool {
        self.by_row.get(row).is_none_or(Vec::is_empty)
    }

    /// Whether some row has a problem.
    pub(super) fn any(&self) -> bool {
        !self.by_row.is_empty()
    }

    /// The rows without a problem.
    pub(super) fn ok_count(&self) -> usize {
        (0..self.rows).filter(|&r| self.is_ok(r)).count()
    }

    /// The rows with problems, in order, and their problems.
    pub(super) fn into_rejected(self) -> impl Iterator<Item = (usize, Vec<String>)> {
        self.by_row
            .into_iter()
            .enumerate()
            .filter(|(_, p)| !p.is_empty())
    }
}

/// The input columns as (wire type, array) for showing rejected rows as JSON; columns of
/// unsupported types show as text.
pub(super) fn render_columns(batch: &RecordBatch, text: bool) -> Vec<(ValueType, ArrayRef)> {
    let schema = batch.schema();
    batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(a, f)| {
            if text {
                let binary = cast_with_options(a, &DataType::Utf8, &CastOptions::default())
                    .unwrap_or_else(|_| a.clone());
                return (ValueType::String, binary);
            }
            normalize(f, a).unwrap_or_else(|_| {
                let shown = cast_with_options(a, &DataType::Utf8, &CastOptions::default())
                    .unwrap_or_else(|_| new_null_array(&DataType::Utf8, a.len()));
                (ValueType::String, shown)
            })
        })
        .collect()
}
