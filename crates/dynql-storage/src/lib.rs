//! Storage of dynql tables on an object store.
//!
//! This is the first storage: tables are Parquet [chunks](chunk) listed in a JSON catalog
//! ([`Store`]). Its interface (create, remove, read a table's rows as Arrow batches, apply
//! row writes) is the one the versioned commit-log storage of DESIGN.md keeps.

pub mod chunk;
pub mod error;
pub mod store;

pub use error::{Error, Result};
pub use store::{validate_path, ChunkRef, Store, TableEntry, TableOptions};
