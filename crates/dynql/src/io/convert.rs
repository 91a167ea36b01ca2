//! Converting input batches to rows of a table: columns matched by name, values converted to
//! the column types, computed key columns filled in, and every row that cannot be stored
//! rejected with all its reasons.
//!
//! Typed input (Parquet) stays columnar: a column already of the table's Arrow type is taken
//! as is, one of a wider family (`Int32`, `Utf8`, `Float32`, dictionaries, views) is cast, and
//! only mismatched columns (say `UInt64` into an `int64` column) are converted value by value
//! with range checks. CSV text is parsed per column type; JSON lines follow `insert-rows`.

use arrow::array::{new_null_array, Array, ArrayRef, AsArray, BooleanArray};
use arrow::compute::{cast_with_options, filter_record_batch, CastOptions};
use arrow::datatypes::{DataType, Field, SchemaRef};
use arrow::record_batch::RecordBatch;

use dynql_core::arrow_convert::{
    array_value, arrow_type, rows_to_batch, table_arrow_schema, value_type_of_field,
    values_to_array,
};
use dynql_core::row::{check_logical_type, row_from_yson, value_for_column};
use dynql_core::schema::{ORDERED_SYSTEM_COLUMNS, TTL_COLUMN, VIRTUAL_TABLET_INDEX};
use dynql_core::{ColumnSchema, LogicalType, TableSchema, Value, ValueType, Yson};
use dynql_ql::ComputedColumns;
use dynql_storage::compaction::Retention;
use dynql_storage::files::types::{
    file_column_type, file_column_values, temporal_values, value_text,
};
use dynql_storage::TableEntry;

use crate::error::{Error, Result};
use crate::io::source::{InputBatch, InputData, JsonLine};
use crate::io::RejectedRow;

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

/// The problems of a batch's rows, by row. Nothing is allocated while no row has one: the
/// usual batch is converted column by column without a pass over its rows.
struct RowProblems {
    rows: usize,
    /// Empty until the first problem; then one entry per row.
    by_row: Vec<Vec<String>>,
}

impl RowProblems {
    fn new(rows: usize) -> RowProblems {
        RowProblems {
            rows,
            by_row: Vec::new(),
        }
    }

    fn push(&mut self, row: usize, problem: String) {
        if self.by_row.is_empty() {
            self.by_row = vec![Vec::new(); self.rows];
        }
        self.by_row[row].push(problem);
    }

    /// The same problem for every row.
    fn push_all(&mut self, problem: String) {
        for row in 0..self.rows {
            self.push(row, problem.clone());
        }
    }

    fn is_ok(&self, row: usize) -> bool {
        self.by_row.get(row).is_none_or(Vec::is_empty)
    }

    /// Whether some row has a problem.
    fn any(&self) -> bool {
        !self.by_row.is_empty()
    }

    /// The rows without a problem.
    fn ok_count(&self) -> usize {
        (0..self.rows).filter(|&r| self.is_ok(r)).count()
    }

    /// The rows with problems, in order, and their problems.
    fn into_rejected(self) -> impl Iterator<Item = (usize, Vec<String>)> {
        self.by_row
            .into_iter()
            .enumerate()
            .filter(|(_, p)| !p.is_empty())
    }
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

    fn convert_json(&self, file: &str, lines: Vec<JsonLine>, first_row: u64) -> Result<Converted> {
        let mut rows = Vec::with_capacity(lines.len());
        let mut tablets = Vec::new();
        let mut rejected = Vec::new();
        for (i, line) in lines.into_iter().enumerate() {
            let reject = |reason: String, input: serde_json::Value| RejectedRow {
                file: file.to_string(),
                row: first_row + i as u64,
                line: Some(line.line),
                reason,
                input,
            };
            let value = match line.value {
                Ok(v) => v,
                Err((reason, raw)) => {
                    rejected.push(reject(reason, serde_json::Value::String(raw)));
                    continue;
                }
            };
            match self.json_row(&value) {
                Ok((row, tablet)) => {
                    rows.push(row);
                    if self.key_count == 0 {
                        tablets.push(tablet);
                    }
                }
                Err(problems) => rejected.push(reject(problems.join("; "), value)),
            }
        }
        let batch = rows_to_batch(&self.arrow_schema, &rows)
            .map_err(|e| Error::Invalid(format!("internal: {e}")))?;
        Ok(Converted {
            batch,
            tablets,
            rejected,
        })
    }

    /// One JSON row as a full row in schema order and its tablet.
    fn json_row(
        &self,
        value: &serde_json::Value,
    ) -> std::result::Result<(Vec<Value>, Option<usize>), Vec<String>> {
        if !value.is_object() {
            return Err(vec!["a row must be a JSON object".into()]);
        }
        let Yson::Map(entries) = Yson::from_json(value) else {
            return Err(vec!["a row must be a JSON object".into()]);
        };
        let mut problems = Vec::new();
        let mut inputs = Vec::new();
        let mut plain = Vec::with_capacity(entries.len());
        for (name, v) in entries {
            let column = self
                .schema
                .column_index(&String::from_utf8_lossy(&name))
                .map(|c| (c, &self.schema.columns()[c]));
            match column {
                Some((c, col)) if col.is_computed() => match value_for_column(col, &v) {
                    Ok(v) => inputs.push((c, v)),
                    Err(e) => problems.push(e.to_string()),
                },
                Some((_, col)) if self.is_system(col) => {}
                _ => plain.push((name, v)),
            }
        }
        let input = row_from_yson(&self.schema, &Yson::Map(plain)).map_err(|e| {
            problems.push(e.to_string());
            problems.clone()
        })?;
        let mut row = Vec::with_capacity(input.values.len());
        for (value, column) in input.values.into_iter().zip(self.schema.columns()) {
            let key = column.is_key() && !column.is_computed();
            match value {
                None if key => problems.push(format!("Missing key column {:?}", column.name)),
                None if column.required && !self.is_system(column) => {
                    problems.push(format!("Missing required column {:?}", column.name))
                }
                Some(Value::Null) if key => {
                    problems.push(format!("key column {:?} is null", column.name))
                }
                _ => {}
            }
            row.push(value.unwrap_or(Value::Null));
        }
        if let Err(m) = self.check_ttl(|c| row[c].clone()) {
            problems.push(m);
        }
        let mut key: Vec<Value> = row[..self.key_count].to_vec();
        if problems.is_empty() {
            if let Err(m) = self.fill_computed(&mut key, &inputs) {
                problems.push(m);
            }
        }
        let tablet = match input.tablet_index.map(|t| self.check_tablet(t)).transpose() {
            Ok(t) => t,
            Err(m) => {
                problems.push(m);
                None
            }
        };
        if !problems.is_empty() {
            return Err(problems);
        }
        row[..self.key_count].clone_from_slice(&key);
        Ok((row, tablet))
    }

    /// Computed column `c`'s values as the table stores them, each checked against the
    /// value the input gave for it, if any (a mismatch is the row's problem).
    fn check_given(
        &self,
        c: usize,
        values: ArrayRef,
        given: &Option<ArrayRef>,
        problems: &mut RowProblems,
    ) -> Result<ArrayRef> {
        let column = &self.schema.columns()[c];
        let t = column.wire_type();
        let values = if values.data_type() == &arrow_type(t) {
            values
        } else {
            arrow::compute::cast(&values, &arrow_type(t))
                .map_err(|e| Error::Invalid(format!("internal: {e}")))?
        };
        // The usual input gives every value and gives it right: the arrays are equal.
        if let Some(given) = given.as_ref().filter(|g| g.to_data() != values.to_data()) {
            for r in 0..values.len() {
                if problems.is_ok(r) && !given.is_null(r) {
                    let (input, computed) = (
                        array_value(given.as_ref(), t, r),
                        array_value(values.as_ref(), t, r),
                    );
                    if input != computed {
                        problems.push(r, self.mismatch(c, &input, &computed));
                    }
                }
            }
        }
        Ok(values)
    }

    /// Fills the computed key columns row by row (rows with a problem get null), adding
    /// evaluation errors and mismatches with the input to each row's problems.
    fn fill_computed_rows(
        &self,
        columns: &mut [ArrayRef],
        given: &[Option<ArrayRef>],
        problems: &mut RowProblems,
    ) -> Result<()> {
        let n = problems.rows;
        let mut computed: Vec<Vec<Value>> = vec![Vec::with_capacity(n); self.key_count];
        for r in 0..n {
            let mut key: Vec<Value> = self.schema.key_columns()[..]
                .iter()
                .zip(columns.iter())
                .map(|(col, a)| array_value(a.as_ref(), col.wire_type(), r))
                .collect();
            if problems.is_ok(r) {
                let inputs: Vec<(usize, Value)> = given
                    .iter()
                    .enumerate()
                    .filter_map(|(c, a)| {
                        let a = a.as_ref()?;
                        let t = self.schema.columns()[c].wire_type();
                        Some((c, array_value(a.as_ref(), t, r)))
                    })
                    .collect();
                if let Err(m) = self.fill_computed(&mut key, &inputs) {
                    problems.push(r, m);
                }
            }
            for (c, v) in key.into_iter().enumerate() {
                if self.schema.columns()[c].is_computed() {
                    computed[c].push(if problems.is_ok(r) { v } else { Value::Null });
                }
            }
        }
        for (c, column) in self.schema.key_columns().iter().enumerate() {
            if column.is_computed() {
                let refs: Vec<&Value> = computed[c].iter().collect();
                columns[c] = values_to_array(column.wire_type(), &refs)
                    .map_err(|e| Error::Invalid(format!("internal: {e}")))?;
            }
        }
        Ok(())
    }

    /// The problem of an input value for computed column `c` that is not what its
    /// expression gives.
    fn mismatch(&self, c: usize, given: &Value, computed: &Value) -> String {
        let column = &self.schema.columns()[c];
        format!(
            "computed column {:?} is {given} in the input but {} gives {computed}",
            column.name,
            column.expression.as_deref().unwrap_or_default(),
        )
    }

    /// Fills the computed columns of a key and checks them against the values the input
    /// gave for them (`inputs`: column position, value; null means "not given").
    fn fill_computed(
        &self,
        key: &mut [Value],
        inputs: &[(usize, Value)],
    ) -> std::result::Result<(), String> {
        if self.computed.is_empty() {
            return Ok(());
        }
        self.computed
            .fill(&self.schema, key)
            .map_err(|e| e.to_string())?;
        for (c, given) in inputs {
            if !given.is_null() && *given != key[*c] {
                return Err(self.mismatch(*c, given, &key[*c]));
            }
        }
        Ok(())
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

/// Converts one input column to a column of the table, recording per-row problems.
///
/// # Errors
/// An Arrow type with no YT counterpart (the message names the column).
fn convert_column(
    field: &Field,
    input: &ArrayRef,
    column: &ColumnSchema,
    text: bool,
    problems: &mut RowProblems,
) -> std::result::Result<ArrayRef, String> {
    let mut values = Vec::with_capacity(input.len());
    if text {
        let strings = input.as_string::<i32>();
        for r in 0..strings.len() {
            values.push(if strings.is_null(r) {
                Value::Null
            } else {
                parse_text(column, strings.value(r)).unwrap_or_else(|m| {
                    problems.push(r, m);
                    Value::Null
                })
            });
        }
    } else if let Some(converted) = convert_temporal(field, input, column, problems)? {
        return Ok(converted);
    } else if input.data_type().is_nested() && column.wire_type() == ValueType::Any {
        // Lists, structs and maps as YSON, as YT QL reads them from files.
        let file_type = file_column_type(input.data_type()).map_err(|why| {
            format!(
                "column {:?} cannot be imported: its Arrow type is {}, {why}",
                field.name(),
                input.data_type()
            )
        })?;
        let file_column = ColumnSchema::new(field.name().clone(), file_type);
        return file_column_values(input, &file_column).map_err(|e| e.to_string());
    } else {
        let (source, normalized) = normalize(field, input)?;
        let plain = column.logical_type.signed_range().is_none()
            && column.logical_type.unsigned_max().is_none()
            && column.logical_type != LogicalType::Utf8
            && column.wire_type() != ValueType::Any;
        if source == column.wire_type() && plain {
            // Already the column's Arrow type with nothing to check: no copy.
            return Ok(normalized);
        }
        for r in 0..normalized.len() {
            let v = array_value(normalized.as_ref(), source, r);
            values.push(coerce(column, v).unwrap_or_else(|m| {
                problems.push(r, m);
                Value::Null
            }));
        }
    }
    let refs: Vec<&Value> = values.iter().collect();
    values_to_array(column.wire_type(), &refs).map_err(|e| format!("internal: {e}"))
}

/// How many microseconds one unit of a YT date type is: the instants `date`, `datetime`,
/// `timestamp`.
fn instant_micros(t: LogicalType) -> Option<i128> {
    match t {
        LogicalType::Date => Some(86_400_000_000),
        LogicalType::Datetime => Some(1_000_000),
        LogicalType::Timestamp => Some(1),
        _ => None,
    }
}

/// A date, time, timestamp or duration input column converted to `column`'s type, recording
/// per-row problems; `None` for other input types.
///
/// Dates and timestamps go into `date`, `datetime` and `timestamp` columns in the column's
/// unit (a value finer than it, such as a time of day into `date`, is the row's problem, never
/// rounded away); durations and times of day into `interval` columns (microseconds). Into an
/// integer column goes the value YT QL reads from the file: days of `Date32`, seconds of
/// `Date64`, microseconds of timestamps, durations and times.
///
/// # Errors
/// A column type the input's values have no meaning in (a timestamp into `string`, a
/// duration into `timestamp`): once, naming the column.
fn convert_temporal(
    field: &Field,
    input: &ArrayRef,
    column: &ColumnSchema,
    problems: &mut RowProblems,
) -> std::result::Result<Option<ArrayRef>, String> {
    let Some((source, values)) = temporal_values(input.as_ref()) else {
        return Ok(None);
    };
    let target = column.logical_type;
    let integer = matches!(target.wire_type(), ValueType::Int64 | ValueType::Uint64)
        && instant_micros(target).is_none()
        && target != LogicalType::Interval;
    let fits = match (instant_micros(source), instant_micros(target)) {
        (Some(_), Some(_)) => true,
        _ => integer || (source == LogicalType::Interval && target == LogicalType::Interval),
    };
    if !fits {
        let into = if source == LogicalType::Interval {
            "interval"
        } else {
            "date, datetime or timestamp"
        };
        return Err(format!(
            "column {:?} has Arrow type {} (YT {source}), which imports into {into} and integer columns, not into {target} column {:?}",
            field.name(),
            input.data_type(),
            column.name
        ));
    }
    let invalid = |message: String| {
        dynql_core::Error::InvalidValue {
            column: column.name.clone(),
            message,
        }
        .to_string()
    };
    let mut out = Vec::with_capacity(values.len());
    for (r, v) in values.into_iter().enumerate() {
        let value = match v {
            None => Ok(Value::Null),
            Some(None) => Err(invalid(format!(
                "value {} is out of range for type {target}",
                value_text(input.as_ref(), r)
            ))),
            Some(Some(v)) => match (instant_micros(source), instant_micros(target)) {
                (Some(from), Some(to)) => {
                    let micros = v as i128 * from;
                    if micros < 0 {
                        Err(invalid(format!(
                            "value {} is before 1970-01-01, which type {target} cannot hold",
                            value_text(input.as_ref(), r)
                        )))
                    } else if micros % to != 0 {
                        Err(invalid(format!(
                            "value {} is not a whole {}: type {target} holds {}",
                            value_text(input.as_ref(), r),
                            if target == LogicalType::Date {
                                "day"
                            } else {
                                "second"
                            },
                            if target == LogicalType::Date {
                                "days"
                            } else {
                                "seconds"
                            },
                        )))
                    } else {
                        u64::try_from(micros / to).map(Value::Uint64).map_err(|_| {
                            invalid(format!(
                                "value {} is out of range for type {target}",
                                value_text(input.as_ref(), r)
                            ))
                        })
                    }
                }
                _ => coerce(column, Value::Int64(v)),
            },
        };
        out.push(value.unwrap_or_else(|m| {
            problems.push(r, m);
            Value::Null
        }));
    }
    let refs: Vec<&Value> = out.iter().collect();
    values_to_array(column.wire_type(), &refs)
        .map(Some)
        .map_err(|e| format!("internal: {e}"))
}

/// An input column as an array of its wire type's Arrow type (casting the wider Arrow
/// families: small integers, `Float32`, `Utf8`, views, dictionaries).
fn normalize(
    field: &Field,
    array: &ArrayRef,
) -> std::result::Result<(ValueType, ArrayRef), String> {
    let unsupported = || {
        format!(
            "column {:?} has Arrow type {}, which cannot be imported (integers, floats, booleans, strings, binary, dates, times, timestamps and durations can; lists, structs and maps into any columns)",
            field.name(),
            array.data_type()
        )
    };
    let cast = |a: &ArrayRef, t: &DataType| {
        cast_with_options(
            a,
            t,
            &CastOptions {
                safe: false,
                ..CastOptions::default()
            },
        )
        .map_err(|e| format!("column {:?}: {e}", field.name()))
    };
    if let DataType::Dictionary(_, value) = array.data_type() {
        let values = cast(array, value)?;
        let unpacked = Field::new(field.name(), value.as_ref().clone(), true)
            .with_metadata(field.metadata().clone());
        return normalize(&unpacked, &values);
    }
    let t = match value_type_of_field(field) {
        Some(t) => t,
        None => match array.data_type() {
            DataType::Utf8View | DataType::BinaryView => ValueType::String,
            _ => return Err(unsupported()),
        },
    };
    let target = arrow_type(t);
    if array.data_type() == &target {
        return Ok((t, array.clone()));
    }
    let casted = match array.data_type() {
        // Views cast to Binary through their non-view form.
        DataType::Utf8View => cast(&cast(array, &DataType::Utf8)?, &target)?,
        _ => cast(array, &target)?,
    };
    Ok((t, casted))
}

/// A value of one wire type converted to a column's type, as `insert-rows` converts: integers
/// between signed and unsigned when in range, integers to doubles, anything to `any`.
fn coerce(column: &ColumnSchema, v: Value) -> std::result::Result<Value, String> {
    let invalid = |message: String| {
        dynql_core::Error::InvalidValue {
            column: column.name.clone(),
            message,
        }
        .to_string()
    };
    let mismatch = |v: &Value| {
        invalid(format!(
            "cannot store {} {v} in a column of type {}",
            v.value_type(),
            column.logical_type
        ))
    };
    let out = match (column.wire_type(), v) {
        (_, Value::Null) => Value::Null,
        (ValueType::Int64, Value::Int64(x)) => Value::Int64(x),
        (ValueType::Int64, Value::Uint64(x)) if x <= i64::MAX as u64 => Value::Int64(x as i64),
        (ValueType::Uint64, Value::Uint64(x)) => Value::Uint64(x),
        (ValueType::Uint64, Value::Int64(x)) if x >= 0 => Value::Uint64(x as u64),
        (ValueType::Double, Value::Double(x)) => Value::Double(x),
        (ValueType::Double, Value::Int64(x)) => Value::Double(x as f64),
        (ValueType::Double, Value::Uint64(x)) => Value::Double(x as f64),
        (ValueType::Boolean, Value::Boolean(x)) => Value::Boolean(x),
        (ValueType::String, Value::String(x)) => {
            if column.logical_type == LogicalType::Utf8 && std::str::from_utf8(&x).is_err() {
                return Err(invalid(
                    "value is not valid UTF-8 but the column type is utf8".into(),
                ));
            }
            Value::String(x)
        }
        (ValueType::Any, Value::Any(x)) => {
            if dynql_core::yson::parse(&x).is_err() {
                return Err(invalid("value is not a valid YSON document".into()));
            }
            Value::Any(x)
        }
        // A scalar stored in an `any` column becomes that YSON scalar, as insert-rows does.
        (ValueType::Any, other) => {
            Value::Any(dynql_core::yson::to_text(&other.to_yson()).into_bytes())
        }
        (_, other) => return Err(mismatch(&other)),
    };
    check_logical_type(column, &out).map_err(|e| e.to_string())?;
    Ok(out)
}

/// A CSV field parsed as a value of the column's type (surrounding spaces are ignored in
/// numbers and booleans; `uint64` also takes YSON's `123u`).
fn parse_text(column: &ColumnSchema, s: &str) -> std::result::Result<Value, String> {
    let bad = || {
        dynql_core::Error::InvalidValue {
            column: column.name.clone(),
            message: format!("cannot parse {s:?} as {}", column.logical_type),
        }
        .to_string()
    };
    let t = s.trim();
    let v = match column.wire_type() {
        ValueType::Int64 => Value::Int64(t.parse().map_err(|_| bad())?),
        ValueType::Uint64 => Value::Uint64(
            t.strip_suffix('u')
                .unwrap_or(t)
                .parse()
                .map_err(|_| bad())?,
        ),
        ValueType::Double => Value::Double(t.parse().map_err(|_| bad())?),
        ValueType::Boolean => match t.to_ascii_lowercase().as_str() {
            "true" | "%true" => Value::Boolean(true),
            "false" | "%false" => Value::Boolean(false),
            _ => return Err(bad()),
        },
        ValueType::String => Value::String(s.as_bytes().to_vec()),
        ValueType::Any => {
            let node = dynql_core::yson::parse(s.as_bytes()).map_err(|_| bad())?;
            Value::Any(dynql_core::yson::to_text(&node).into_bytes())
        }
        ValueType::Null => return Err(bad()),
    };
    check_logical_type(column, &v).map_err(|e| e.to_string())?;
    Ok(v)
}

/// The input columns as (wire type, array) for showing rejected rows as JSON; columns of
/// unsupported types show as text.
fn render_columns(batch: &RecordBatch, text: bool) -> Vec<(ValueType, ArrayRef)> {
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
