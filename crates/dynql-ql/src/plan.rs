//! The bound query: what the executor runs. Produced by [`bind_query`](crate::binder::bind_query).
//!
//! Row layouts: the *joined row* is the main table's columns followed by each joined table's
//! columns (full schemas, in join order). WHERE, group keys and aggregate arguments read the
//! joined row; with GROUP BY, the *grouped row* is the group keys followed by the aggregate
//! results, and HAVING, ORDER BY and the projections read it.

use dynql_core::{TableSchema, ValueType};

use crate::ast::TotalsMode;
use crate::functions::AggregateFunction;
use crate::texpr::TypedExpr;

/// A table the query reads.
#[derive(Debug, Clone)]
pub struct SourceTable {
    pub path: String,
    pub schema: TableSchema,
    /// Position of the table's first column in the joined row.
    pub offset: usize,
}

/// One join of a foreign table.
#[derive(Debug, Clone)]
pub struct JoinPlan {
    /// Index into [`QueryPlan::sources`].
    pub source: usize,
    pub left_outer: bool,
    /// Equation sides over the joined row built so far.
    pub self_keys: Vec<TypedExpr>,
    /// Equation sides over a row of the foreign table.
    pub foreign_keys: Vec<TypedExpr>,
    /// The `AND` filter over a row of the foreign table.
    pub foreign_predicate: Option<TypedExpr>,
}

/// One aggregate call.
#[derive(Debug, Clone)]
pub struct AggregateCall {
    pub function: AggregateFunction,
    pub args: Vec<TypedExpr>,
    pub ty: ValueType,
}

/// GROUP BY and what follows it.
#[derive(Debug, Clone)]
pub struct GroupPlan {
    pub keys: Vec<TypedExpr>,
    pub aggregates: Vec<AggregateCall>,
    pub having: Option<TypedExpr>,
    pub totals: TotalsMode,
}

/// An output column.
#[derive(Debug, Clone)]
pub struct OutputColumn {
    pub name: String,
    pub expr: TypedExpr,
}

/// A bound, typed query.
#[derive(Debug, Clone)]
pub struct QueryPlan {
    /// The main table first, then joined tables.
    pub sources: Vec<SourceTable>,
    pub joins: Vec<JoinPlan>,
    pub where_clause: Option<TypedExpr>,
    pub group: Option<GroupPlan>,
    pub order_by: Vec<(TypedExpr, bool)>,
    pub projections: Vec<OutputColumn>,
    pub offset: u64,
    pub limit: Option<u64>,
}

impl QueryPlan {
    /// Width of the joined row.
    pub fn joined_width(&self) -> usize {
        self.sources.iter().map(|s| s.schema.columns().len()).sum()
    }
}
