//! YT QL, the query language of `select_rows`:
//!
//! 1. [`lexer`] and [`parser`]: text to [`ast`], every error with its position;
//!    [`placeholders`] splices `{name}` values first;
//! 2. [`binder`]: names, YT v1 typing and clause rules, producing a [`plan::QueryPlan`] of
//!    [`texpr::TypedExpr`]s;
//! 3. [`eval`] and [`aggregate`]: YT semantics for evaluating expressions and aggregates;
//!    [`functions`] holds the builtins, [`value_limits`] the cap on the strings they build;
//! 4. [`computed`]: computed key columns, checked at table creation and filled on write;
//! 5. [`ranges`]: key-range inference, the key ranges a WHERE predicate can match
//!    ([`ranges::infer_key_ranges`]).
//!
//! The executor that runs a plan over tables lives in `dynql-exec`.

pub mod aggregate;
pub mod ast;
pub mod binder;
pub mod computed;
pub mod error;
pub mod eval;
pub mod functions;
pub mod lexer;
pub mod parser;
pub mod placeholders;
pub mod plan;
pub mod ranges;
pub mod regex_functions;
pub mod texpr;
pub mod types;
pub mod value_limits;
pub mod ypath;

pub use binder::{bind_query, BindOptions, Catalog};
pub use computed::ComputedColumns;
pub use error::{Error, Result, Span};
pub use eval::EvalOptions;
pub use plan::QueryPlan;
pub use ranges::{infer_key_ranges, KeyRange, RangeOptions};
