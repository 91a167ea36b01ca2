//! Query execution for dynql: the DataFusion [`TableProvider`](datafusion::datasource::TableProvider)
//! over store tables ([`provider::StoreTable`]) and the YT QL pipeline that runs a bound
//! query ([`select::select_rows`]).

pub mod computed;
pub mod engine;
pub mod error;
pub mod provider;
mod pushdown;
pub mod scan;
pub mod select;
pub mod source;
pub mod sql;
mod vectorized;

pub use engine::Engine;
pub use error::{Error, Result};
pub use scan::{Analysis, Explanation};
pub use select::{
    explain_analyze_query, explain_query, select_rows, select_stream, QueryResult, QueryStream,
    SelectOptions, Statistics,
};
pub use source::FileTables;
