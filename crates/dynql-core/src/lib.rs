//! The data model of dynql: YT [values](value::Value) and their total order, YT
//! [types](types::ValueType), [table schemas](schema::TableSchema) as `yt` accepts them,
//! [key ranges](key_range), [YSON](yson), bit-exact [`farm_hash`](farm_hash::farm_hash), and the conversions between YT
//! values and Arrow arrays.
//!
//! Everything above this crate (query language, storage, execution) speaks these types.

pub mod arrow_convert;
pub mod error;
pub mod farm_hash;
pub mod json_rows;
pub mod key_range;
pub mod limits;
pub mod row;
pub mod schema;
pub mod types;
pub mod value;
pub mod yson;

pub use error::{Error, Result};
pub use key_range::{normalize_ranges, KeyBound, KeyRange};
pub use schema::{ColumnSchema, TableSchema};
pub use types::{LogicalType, ValueType};
pub use value::{compare_rows, compare_values, Value};
pub use yson::Yson;
