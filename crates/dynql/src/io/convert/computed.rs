//! Computed key columns of converted rows: filled from their expressions and checked against
//! the values the input gave for them.

use arrow::array::{Array, ArrayRef};

use dynql_core::arrow_convert::{array_value, arrow_type, values_to_array};
use dynql_core::Value;

use super::problems::RowProblems;
use super::Converter;
use crate::error::{Error, Result};

impl Converter {
    /// Computed column `c`'s values as the table stores them, each checked against the
    /// value the input gave for it, if any (a mismatch is the row's problem).
    pub(super) fn check_given(
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
    pub(super) fn fill_computed_rows(
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
    pub(super) fn fill_computed(
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
}
