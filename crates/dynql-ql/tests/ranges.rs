//! Key-range inference: the public conformance cases, the spec's case table (B.7) and a
//! randomized check that no satisfying row ever falls outside the inferred ranges.

#[path = "ranges/cases.rs"]
mod cases;
#[path = "ranges/stress.rs"]
mod stress;

use dynql_core::TableSchema;
use dynql_ql::ranges::{infer_key_ranges, KeyRange, RangeOptions};
use dynql_ql::{bind_query, BindOptions, Catalog, QueryPlan};

/// A catalog holding one table, `//t`.
pub struct OneTable(pub TableSchema);

impl Catalog for OneTable {
    fn table_schema(&self, path: &str) -> Option<TableSchema> {
        (path == "//t").then(|| self.0.clone())
    }
}

/// Binds `* from [//t] where predicate`.
pub fn bind(schema: &TableSchema, predicate: &str) -> Result<QueryPlan, dynql_ql::Error> {
    let query = format!("* from [//t] where {predicate}");
    bind_query(
        &query,
        None,
        &OneTable(schema.clone()),
        BindOptions::default(),
    )
}

/// Binds `predicate` over `//t` and infers its key ranges.
pub fn infer(
    schema: &TableSchema,
    predicate: &str,
    limit: u64,
) -> Result<Vec<KeyRange>, dynql_ql::Error> {
    let plan = bind(schema, predicate)?;
    let options = RangeOptions {
        range_expansion_limit: limit,
    };
    infer_key_ranges(schema, plan.where_clause.as_ref(), &options)
}

/// A schema in the spec's notation: `k:int64=l*2, l:int64, m:int64` (every column a key
/// column, `=expr` for computed ones), plus a non-key int64 column `a`.
pub fn key_schema(spec: &str) -> TableSchema {
    let mut columns: Vec<String> = spec
        .split(", ")
        .map(|c| {
            let (name_type, expr) = match c.split_once('=') {
                Some((nt, e)) => (nt, Some(e)),
                None => (c, None),
            };
            let (name, ty) = name_type.split_once(':').expect("name:type");
            let expr = expr
                .map(|e| format!(";expression=\"{e}\""))
                .unwrap_or_default();
            format!("{{name={name};type={ty};sort_order=ascending{expr}}}")
        })
        .collect();
    columns.push("{name=a;type=int64}".into());
    TableSchema::parse(&format!("[{}]", columns.join(";"))).expect("schema")
}
