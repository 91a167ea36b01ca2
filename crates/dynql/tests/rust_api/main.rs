//! The Rust API beyond the async calls (issue 40, item 5): the blocking API, a table as a
//! DataFusion `TableProvider` in the caller's own session, typed access to result rows.
//! One binary for the three: each test binary links all of DataFusion.

mod blocking;
mod table_provider;
mod typed_rows;
