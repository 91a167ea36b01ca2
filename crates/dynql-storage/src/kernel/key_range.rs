//! Tablet pivot keys. Key ranges themselves ([`KeyBound`], [`KeyRange`]) are the engine's one
//! type from `dynql-core`, re-exported here.

pub use dynql_core::key_range::{normalize_ranges, KeyBound, KeyRange};
use dynql_core::Value;
use serde::{Deserialize, Serialize};

/// A tablet's pivot key: the smallest key the tablet may hold (the first tablet's is empty,
/// below every key). Stored as a text YSON list, as YT prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PivotKey(#[serde(with = "crate::kernel::chunk_ref::key_serde")] pub Vec<Value>);
