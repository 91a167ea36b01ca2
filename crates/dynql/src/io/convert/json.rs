//! JSON lines converted to rows as `insert-rows` converts them, each row rejected with all its
//! problems.

use dynql_core::arrow_convert::rows_to_batch;
use dynql_core::row::{row_from_yson, value_for_column};
use dynql_core::{Value, Yson};

use super::{Converted, Converter};
use crate::error::{Error, Result};
use crate::io::source::JsonLine;
use crate::io::RejectedRow;

impl Converter {
    pub(super) fn convert_json(
        &self,
        file: &str,
        lines: Vec<JsonLine>,
        first_row: u64,
    ) -> Result<Converted> {
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
        let names = self.schema.columns().iter().map(|c| c.name.as_str());
        dynql_core::limits::check_row(names.zip(&row)).map_err(|m| vec![m])?;
        Ok((row, tablet))
    }
}
