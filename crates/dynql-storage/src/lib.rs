//! Storage of dynql tables on an object store.
//!
//! Every change is a record of the [commit log](log) (catalog changes and versioned row
//! deltas); the [`Store`] replays the log and resolves versions at a [`Timestamp`]
//! ([`mvcc`]). Flush and compaction move versions into key-sorted Parquet [chunks](chunk);
//! reads merge the chunks with the in-memory dynamic store in key order.

pub mod bulk;
mod bulk_chunk;
mod bulk_upload;
mod cache_entries;
pub mod catalog;
pub mod check;
pub mod checkpoint;
pub mod checksum;
pub mod chunk;
mod chunk_cache;
mod clean_merge;
pub mod codec;
mod commit;
mod compact;
mod compact_source;
pub mod compaction;
pub mod compaction_policy;
pub mod conflict;
mod count;
pub mod cypress;
pub mod error;
mod external_sort;
pub mod files;
mod flush;
mod garbage;
pub mod in_memory;
pub mod key_filter;
mod key_range;
mod key_search;
pub mod log;
pub mod log_store;
mod lookup_cache;
mod merge;
pub mod mvcc;
mod object_file;
mod objects;
mod page_filter;
mod page_index;
pub mod partitioning;
pub mod progress;
pub mod queue;
mod read;
mod record_paths;
mod repair;
mod replay;
mod row_group_decode;
pub mod row_group_filter;
pub mod scan;
pub mod scan_plan;
mod schema_change;
mod sort_keys;
mod state;
pub mod static_table;
pub mod store;
pub mod stream;
pub mod tablets;
pub mod timestamp;
pub mod transaction;
pub mod ttl;
mod validate;
mod weight;
mod write;

pub use bulk::BulkWrite;
pub use cache_entries::CacheAdmission;
pub use check::{CheckReport, Damage};
pub use chunk::{ChunkRef, Cleanliness, RowGroupRef};
pub use commit::MAX_READ_AHEAD_NANOS;
pub use compaction::Retention;
pub use conflict::LockMode;
pub use error::{Error, Result};
pub use key_range::PivotKey;
pub use mvcc::WriteKind;
pub use queue::QueueTablet;
pub use read::LookupStatistics;
pub use repair::RepairReport;
pub use row_group_filter::{AllOf, ColumnStatistics, RowGroupFilter};
pub use scan::{KeyBound, KeyRange, ScanStatistics, TabletRows};
pub use store::{
    canonical_attribute, validate_path, AttributeValue, RowValues, Store, TableEntry, TableOptions,
    GC_GRACE_MS, MAX_PATH_BYTES, MAX_PATH_DEPTH, MOUNT_CONFIG_KEYS, WRITABLE_ATTRIBUTES,
};
pub use stream::{Prefetch, ScanStream, Snapshot, StreamRead, TableScan};
pub use tablets::{Reshard, TabletCommand, TabletState};
pub use timestamp::Timestamp;
pub use transaction::TransactionInfo;
