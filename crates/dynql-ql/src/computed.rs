//! Computed key columns (`expression = "farm_hash(k) % 16"`): checked when a table is created
//! and evaluated on every write.
//!
//! An expression may read only non-computed key columns, and its type must be the column's
//! wire type (literals adapt, so `k / 2` is int64 for an int64 `k`).

use dynql_core::{TableSchema, Value};

use crate::binder::{fold, Binder};
use crate::error::{Error, Result};
use crate::eval::{evaluate, EvalOptions};
use crate::lexer::tokenize;
use crate::parser::parse_expression;
use crate::texpr::TypedExpr;

/// The computed columns of one table, ready to evaluate.
#[derive(Debug, Clone, Default)]
pub struct ComputedColumns {
    /// (column position, expression over the row in schema order).
    columns: Vec<(usize, TypedExpr)>,
}

fn bind_expression(schema: &TableSchema, column: usize, text: &str) -> Result<TypedExpr> {
    let name = &schema.columns()[column].name;
    let context = |e: Error| {
        Error::invalid_query(format!(
            "Invalid expression of computed column {name:?}: {e}"
        ))
    };
    let ast = parse_expression(&tokenize(text).map_err(context)?).map_err(context)?;
    let mut binder = Binder::for_table(schema);
    let want = schema.columns()[column].wire_type();
    let set = binder.infer(&ast).map_err(context)?;
    if !set.contains(want) {
        return Err(Error::invalid_query(format!(
            "Computed column {name:?} has type {want} but its expression {text:?} has type {}",
            set.describe()
        )));
    }
    let built = binder.build(&ast, want).map_err(context)?;
    fold(built, EvalOptions::default()).map_err(context)
}

/// Positions of the columns a computed column's expression reads.
pub fn expression_inputs(schema: &TableSchema, text: &str) -> Result<Vec<usize>> {
    let position = schema
        .columns()
        .iter()
        .position(|c| c.expression.as_deref() == Some(text))
        .unwrap_or(0);
    let e = bind_expression(schema, position, text)?;
    let mut cols = Vec::new();
    e.referenced_columns(&mut cols);
    Ok(cols)
}

impl ComputedColumns {
    /// Checks and compiles every computed column of `schema`.
    ///
    /// # Errors
    /// A malformed expression, a reference to anything but a non-computed key column, or a
    /// type other than the column's.
    pub fn compile(schema: &TableSchema) -> Result<ComputedColumns> {
        let mut columns = Vec::new();
        for (i, c) in schema.columns().iter().enumerate() {
            let Some(text) = &c.expression else { continue };
            let e = bind_expression(schema, i, text)?;
            let mut inputs = Vec::new();
            e.referenced_columns(&mut inputs);
            for input in inputs {
                let dep = &schema.columns()[input];
                if !dep.is_key() || dep.is_computed() {
                    return Err(Error::invalid_query(format!(
                        "Computed column {:?} depends on column {:?}, which is not a non-computed key column",
                        c.name, dep.name
                    )));
                }
            }
            columns.push((i, e));
        }
        Ok(ComputedColumns { columns })
    }

    /// The compiled expression of the computed column at position `column`, if it is one.
    pub fn expression(&self, column: usize) -> Option<&TypedExpr> {
        self.columns
            .iter()
            .find(|(i, _)| *i == column)
            .map(|(_, e)| e)
    }

    /// The computed columns: position and compiled expression (over the row in schema order).
    pub fn iter(&self) -> impl Iterator<Item = (usize, &TypedExpr)> {
        self.columns.iter().map(|(i, e)| (*i, e))
    }

    /// True when the table has no computed columns.
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// Fills the computed columns of a row given in schema order.
    ///
    /// # Errors
    /// Evaluation errors (e.g. division by zero), with the column named.
    pub fn fill(&self, schema: &TableSchema, row: &mut [Value]) -> Result<()> {
        for (i, e) in &self.columns {
            let v = evaluate(e, row, EvalOptions::default()).map_err(|err| {
                Error::Runtime(format!(
                    "Cannot evaluate computed column {:?}: {err}",
                    schema.columns()[*i].name
                ))
            })?;
            row[*i] = v;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(text: &str) -> TableSchema {
        TableSchema::parse(text).unwrap()
    }

    #[test]
    fn evaluates_hash_and_division_keys() {
        let s = schema(
            "[{name=h;type=uint64;sort_order=ascending;expression=\"farm_hash(k) % 10\"};\
              {name=d;type=int64;sort_order=ascending;expression=\"k / 2\"};\
              {name=k;type=int64;sort_order=ascending};{name=v;type=string}]",
        );
        let c = ComputedColumns::compile(&s).unwrap();
        let mut row = vec![Value::Null, Value::Null, Value::Int64(42), Value::Null];
        c.fill(&s, &mut row).unwrap();
        assert_eq!(row[0], Value::Uint64(8164349598829955404 % 10));
        assert_eq!(row[1], Value::Int64(21));
    }

    #[test]
    fn rejects_bad_dependencies_and_types() {
        let e = ComputedColumns::compile(&schema(
            "[{name=h;type=uint64;sort_order=ascending;expression=\"farm_hash(v)\"};{name=k;type=int64;sort_order=ascending};{name=v;type=string}]",
        ))
        .unwrap_err();
        assert!(
            e.to_string().contains("not a non-computed key column"),
            "{e}"
        );
        let e = ComputedColumns::compile(&schema(
            "[{name=h;type=int64;sort_order=ascending;expression=\"farm_hash(k)\"};{name=k;type=int64;sort_order=ascending};{name=v;type=string}]",
        ))
        .unwrap_err();
        assert!(e.to_string().contains("has type int64"), "{e}");
        assert!(ComputedColumns::compile(&schema(
            "[{name=h;type=int64;sort_order=ascending;expression=\"nope(k)\"};{name=k;type=int64;sort_order=ascending};{name=v;type=string}]",
        ))
        .is_err());
    }
}
