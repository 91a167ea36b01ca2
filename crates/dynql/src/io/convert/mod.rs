//! Converting input batches to rows of a table: columns matched by name, values converted to
//! the column types, computed key columns filled in, and every row that cannot be stored
//! rejected with all its reasons.
//!
//! Typed input (Parquet) stays columnar: a column already of the table's Arrow type is taken
//! as is, one of a wider family (`Int32`, `Utf8`, `Float32`, dictionaries, views) is cast, and
//! only mismatched columns (say `UInt64` into an `int64` column) are converted value by value
//! with range checks. CSV text is parsed per column type; JSON lines follow `insert-rows`.

use arrow::array::{new_null_array, Array, ArrayRef, BooleanArray};
use arrow::compute::filter_record_batch;
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;

use dynql_core::arrow_convert::{array_value, arrow_type, table_arrow_schema};
use dynql_core::schema::{ORDERED_SYSTEM_COLUMNS, TTL_COLUMN, VIRTUAL_TABLET_INDEX};
use dynql_core::{ColumnSchema, LogicalType, TableSchema, Value, ValueType};
use dynql_ql::ComputedColumns;
use dynql_storage::Retention;
use dynql_storage::TableEntry;

use crate::error::{Error, Result};
use crate::io::source::{InputBatch, InputData};
use crate::io::RejectedRow;

use column::convert_column;
use problems::{render_columns, RowProblems};

mod column;
mod computed;
mod json;
mod problems;
mod temporal;

/// Converts input batches to the rows of one table.
pub(crate) struct Converter {
    schema: TableSchema,
    computed: ComputedColumns,
    arrow_schema: SchemaRef,
    key_count: usize,
    tablet_count: usize,
    /// The `$ttl` column, if the schema has one, and the rule its values must follow.
    ttl: Option<(usize, Retention)>,
}

/// The outcome of converting one input batch.
pub(crate) struct Converted {
    /// The accepted rows in the table's Arrow schema, input order.
    pub batch: RecordBatch,
    /// Ordered tables: the `$tablet_index` each accepted row names, if any.
    pub tablets: Vec<Option<usize>>,
    pub rejected: Vec<RejectedRow>,
}

impl Converter {
    /// A converter for a table's schema.
    ///
    /// # Errors
    /// A computed column that does not compile (the table could not have been created).
    pub(crate) fn new(table: &TableEntry) -> Result<Converter> {
        let schema = &table.schema;
        Ok(Converter {
            computed: ComputedColumns::compile(schema)?,
            arrow_schema: table_arrow_schema(schema),
            key_count: schema.key_column_count(),
            schema: schema.clone(),
            tablet_count: table.tablet_count,
            ttl: schema
                .column_index(TTL_COLUMN)
                .map(|c| (c, table.retention)),
        })
    }

    /// Checks a row's `$ttl` value (see [`Retention::check_row_ttl`]).
    fn check_ttl(&self, row: impl Fn(usize) -> Value) -> std::result::Result<(), String> {
        match &self.ttl {
            Some((c, retention)) => match row(*c) {
                Value::Uint64(t) => retention.check_row_ttl(t),
                _ => Ok(()),
            },
            None => Ok(()),
        }
    }

    /// Converts one batch read from `file`.
    ///
    /// # Errors
    /// Problems of the file rather than of rows: a column given twice, a column of an Arrow
    /// type that has no YT counterpart.
    pub(crate) fn convert(&self, file: &str, input: InputBatch) -> Result<Converted> {
        match input.data {
            InputData::Typed(batch) => self.convert_arrow(file, &batch, false, input.first_row),
            InputData::Text(batch) => self.convert_arrow(file, &batch, true, input.first_row),
            InputData::Json(lines) => self.convert_json(file, lines, input.first_row),
        }
    }

    /// The refusal of a file with columns `unknown` the table does not have, suggesting the
    /// import of the others.
    fn unknown_columns(&self, batch: &RecordBatch, unknown: &[&str]) -> String {
        let shown: Vec<String> = unknown
            .iter()
            .map(|n| dynql_core::error::shown(n))
            .collect();
        let known: Vec<&str> = batch
            .schema_ref()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .filter(|n| !unknown.contains(n))
            .collect();
        let suggestion = if known.is_empty() {
            "map file columns to table columns with --columns TABLE_COLUMN=FILE_COLUMN,… (ImportOptions::columns)".to_string()
        } else {
            format!(
                "import the others with --columns {} (ImportOptions::columns; TABLE_COLUMN=FILE_COLUMN maps a column to another name)",
                known.join(",")
            )
        };
        format!(
            "the file has column{} {} that the table does not have; {suggestion}",
            if unknown.len() == 1 { "" } else { "s" },
            shown.join(", ")
        )
    }

    /// True for columns the engine fills on its own in ordered tables (input values ignored).
    fn is_system(&self, column: &ColumnSchema) -> bool {
        self.key_count == 0 && ORDERED_SYSTEM_COLUMNS.contains(&column.name.as_str())
    }

    fn convert_arrow(
        &self,
        file: &str,
        batch: &RecordBatch,
        text: bool,
        first_row: u64,
    ) -> Result<Converted> {
        let n = batch.num_rows();
        let width = self.schema.columns().len();
        let mut problems = RowProblems::new(n);
        let file_error = |m: String| Error::Invalid(format!("{file}: {m}"));
        // Which input column feeds each schema column.
        let mut slots: Vec<Option<usize>> = vec![None; width];
        let mut tablet_column = None;
        let mut unknown = Vec::new();
        for (i, field) in batch.schema_ref().fields().iter().enumerate() {
            let name = field.name();
            match self.schema.column_index(name) {
                Some(c) if slots[c].is_some() => {
                    return Err(file_error(format!("column {name:?} appears twice")))
                }
                Some(c) => slots[c] = Some(i),
                None if self.key_count == 0 && name == VIRTUAL_TABLET_INDEX => {
                    tablet_column = Some(i)
                }
                None => unknown.push(name.as_str()),
            }
        }
        // Columns the table lacks are the file's shape, not its rows' fault: refused once.
        if !unknown.is_empty() {
            return Err(file_error(self.unknown_columns(batch, &unknown)));
        }
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(width);
        // Converted input values of computed columns, checked against the expressions.
        let mut given: Vec<Option<ArrayRef>> = vec![None; width];
        for (c, column) in self.schema.columns().iter().enumerate() {
            let target = arrow_type(column.wire_type());
            let Some(i) = slots[c].filter(|_| !self.is_system(column)) else {
                if column.is_key() && !column.is_computed() {
                    problems.push_all(format!("Missing key column {:?}", column.name));
                } else if column.required && !self.is_system(column) {
                    problems.push_all(format!("Missing required column {:?}", column.name));
                }
                columns.push(new_null_array(&target, n));
                continue;
            };
            let input = batch.column(i);
            let converted =
                convert_column(batch.schema().field(i), input, column, text, &mut problems)
                    .map_err(file_error)?;
            let null_problem = if column.is_key() && !column.is_computed() {
                Some(format!("key column {:?} is null", column.name))
            } else if column.required {
                Some(format!(
                    "column {:?} is required and cannot be null",
                    column.name
                ))
            } else {
                None
            };
            if let Some(problem) = null_problem.filter(|_| input.null_count() > 0) {
                for r in (0..n).filter(|&r| input.is_null(r)) {
                    problems.push(r, problem.clone());
                }
            }
            if column.is_computed() {
                given[c] = Some(converted);
                columns.push(new_null_array(&target, n));
            } else {
                columns.push(converted);
            }
        }
        // Before the keys are taken: a rejected row must not leave its key behind.
        if let Some((c, _)) = &self.ttl {
            let t = self.schema.columns()[*c].wire_type();
            for r in 0..n {
                if let Err(m) = self.check_ttl(|_| array_value(columns[*c].as_ref(), t, r)) {
                    problems.push(r, m);
                }
            }
        }
        if !self.computed.is_empty() {
            // Column by column; when some row fails to evaluate, row by row to tell which.
            let keys = &columns[..self.key_count];
            match dynql_exec::computed::evaluate_computed_columns(
                &self.schema,
                &self.computed,
                keys,
            ) {
                Ok(filled) => {
                    for (c, values) in filled {
                        let values = self.check_given(c, values, &given[c], &mut problems)?;
                        columns[c] = values;
                    }
                }
                Err(_) => self.fill_computed_rows(&mut columns, &given, &mut problems)?,
            }
        }
        // YT's sizes (dynql_core::limits): a row past them is rejected like any bad row.
        let mut weights = vec![1u64; n];
        for (column, values) in self.schema.columns().iter().zip(&columns) {
            let max = dynql_core::limits::MAX_VALUE_BYTES;
            dynql_storage::kernel::weight::add_row_weights(values, &mut weights, max, |r, l| {
                problems.push(r, dynql_core::limits::value_too_long(&column.name, l))
            });
        }
        for (r, &w) in weights.iter().enumerate() {
            if w > dynql_core::limits::MAX_ROW_WEIGHT {
                problems.push(r, dynql_core::limits::row_too_heavy(w));
            }
        }
        let mut tablets = Vec::new();
        if let Some(i) = tablet_column {
            let field = batch.schema().field(i).clone();
            let index = ColumnSchema::new(VIRTUAL_TABLET_INDEX, LogicalType::Int64);
            let values = convert_column(&field, batch.column(i), &index, text, &mut problems)
                .map_err(file_error)?;
            for r in 0..n {
                match array_value(values.as_ref(), ValueType::Int64, r) {
                    Value::Int64(t) => match self.check_tablet(t) {
                        Ok(t) if problems.is_ok(r) => tablets.push(Some(t)),
                        Ok(_) => {}
                        Err(m) => problems.push(r, m),
                    },
                    _ if problems.is_ok(r) => tablets.push(None),
                    _ => {}
                }
            }
        } else if self.key_count == 0 {
            tablets = vec![None; problems.ok_count()];
        }
        let table_batch = RecordBatch::try_new(self.arrow_schema.clone(), columns)
            .map_err(|e| Error::Invalid(format!("internal: {e}")))?;
        if !problems.any() {
            return Ok(Converted {
                batch: table_batch,
                tablets,
                rejected: Vec::new(),
            });
        }
        let mask: BooleanArray = (0..n).map(|r| Some(problems.is_ok(r))).collect();
        let accepted = filter_record_batch(&table_batch, &mask)
            .map_err(|e| Error::Invalid(format!("internal: {e}")))?;
        let mut rejected = Vec::new();
        if accepted.num_rows() < n {
            let render = render_columns(batch, text);
            for (r, p) in problems.into_rejected() {
                let row = first_row + r as u64;
                let mut input = serde_json::Map::new();
                for (field, (t, a)) in batch.schema().fields().iter().zip(&render) {
                    input.insert(
                        field.name().clone(),
                        array_value(a.as_ref(), *t, r).to_json(),
                    );
                }
                rejected.push(RejectedRow {
                    file: file.to_string(),
                    row,
                    // CSV: the header is line 1.
                    line: text.then_some(row + 1),
                    reason: p.join("; "),
                    input: serde_json::Value::Object(input),
                });
            }
        }
        Ok(Converted {
            batch: accepted,
            tablets,
            rejected,
        })
    }

    fn check_tablet(&self, t: i64) -> std::result::Result<usize, String> {
        if t < 0 || t as usize >= self.tablet_count {
            return Err(format!(
                "Invalid $tablet_index {t}: the table has {} tablets",
                self.tablet_count
            ));
        }
        Ok(t as usize)
    }
}
