//! Key-range inference: which key ranges of a sorted table can hold rows satisfying a WHERE
//! predicate (spec `range-inference.md`, sections B.0–B.5).
//!
//! ```text
//!  predicate ──extract──▶ constraint trie ──expand──▶ constraint rows ──▶ key ranges ──merge──▶
//!  (typed)     NOT pushed   per key column:    one interval per    computed key
//!              down         sorted intervals   key column, within  columns evaluated
//!                           + continuations    the expansion limit or enumerated
//! ```
//!
//! The invariant: **every row that satisfies the predicate lies inside an inferred range.**
//! Ranges may hold more; whatever is not understood (functions, non-key columns, NOT over IN)
//! constrains nothing, and exceeding `range_expansion_limit` only coarsens ranges, never fails.
//! The scan still applies the predicate to every row it reads.
//!
//! Ordered tables use the same inference over the pseudo key `$tablet_index`, `$row_index`.
//!
//! Entry point: [`infer_key_ranges`]; the result is a sorted list of disjoint [`KeyRange`]s.
//! Design note: `docs/design/0005-range-inference.md` (invariants, departures from YT).

mod bound;
mod computed;
mod constraints;
mod expand;
mod extract;
mod range;

pub use range::{used_key_width, KeyBound, KeyRange};

use dynql_core::TableSchema;

use crate::error::Result;
use crate::texpr::TypedExpr;

use computed::KeyColumns;
use constraints::Trie;
use expand::{for_each_row, key_width};

/// The default `range_expansion_limit` of `select_rows`.
pub const DEFAULT_RANGE_EXPANSION_LIMIT: u64 = 200_000;

/// Options of range inference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeOptions {
    /// Bounds how many ranges the predicate may expand into and how many combinations of
    /// computed key column values are enumerated per constraint row. Exceeding it never fails:
    /// ranges just get wider.
    pub range_expansion_limit: u64,
}

impl Default for RangeOptions {
    fn default() -> RangeOptions {
        RangeOptions {
            range_expansion_limit: DEFAULT_RANGE_EXPANSION_LIMIT,
        }
    }
}

/// Infers the ranges of `schema`'s key that hold every row satisfying `predicate`.
///
/// `predicate` reads the joined row, whose first columns are `schema`'s (as
/// [`QueryPlan::where_clause`](crate::plan::QueryPlan) does); `None` means no WHERE. The
/// result is sorted and merged (no two ranges overlap or touch); a predicate that constrains
/// no key gives the single range `[] .. [MAX]`, one that holds for no key gives no range.
///
/// # Errors
/// A computed key column whose expression does not compile; an evaluation error of a computed
/// column while enumerating its values (`Division by zero`, `Division of INT_MIN by -1`); a key
/// column repeated in an IN tuple.
///
/// # Example
/// ```
/// use dynql_core::TableSchema;
/// use dynql_ql::ranges::{infer_key_ranges, RangeOptions};
/// use dynql_ql::{bind_query, BindOptions, Catalog};
///
/// struct One(TableSchema);
/// impl Catalog for One {
///     fn table_schema(&self, _: &str) -> Option<TableSchema> {
///         Some(self.0.clone())
///     }
/// }
/// let schema = TableSchema::parse(
///     "[{name=k;type=int64;sort_order=ascending};{name=l;type=int64;sort_order=ascending};{name=v;type=string}]",
/// )?;
/// let plan = bind_query("* from [//t] where k = 5 and l > 2", None, &One(schema.clone()), BindOptions::default())?;
/// let ranges = infer_key_ranges(&schema, plan.where_clause.as_ref(), &RangeOptions::default())?;
/// assert_eq!(ranges.len(), 1);
/// assert_eq!(ranges[0].to_string(), "[5,2,MAX]..[5,MAX]");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn infer_key_ranges(
    schema: &TableSchema,
    predicate: Option<&TypedExpr>,
    options: &RangeOptions,
) -> Result<Vec<KeyRange>> {
    let keys = KeyColumns::of(schema)?;
    let trie = match predicate {
        Some(p) => extract::extract(p, schema)?,
        None => Trie::universal(),
    };
    let limit = options.range_expansion_limit;
    // Enumerated modulo columns multiply the ranges of each constraint row, so fewer rows fit.
    let width = key_width(
        &trie,
        keys.key_count(),
        limit.div_ceil(keys.modulo_expansion()),
    );
    let mut ranges = Vec::new();
    for_each_row(&trie, keys.key_count(), width, &mut |row| {
        keys.row_ranges(row, limit, &mut ranges)
    })?;
    Ok(range::normalize_ranges(ranges))
}
