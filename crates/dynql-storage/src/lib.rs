//! Storage of dynql tables on an object store.
//!
//! Every change is a record of the [commit log](log) (catalog changes and versioned row
//! deltas); the [`Store`] replays the log and resolves versions at a [`Timestamp`]
//! ([`mvcc`]). Flush and compaction move versions into key-sorted Parquet [chunks](chunk);
//! reads merge the chunks with the in-memory dynamic store in key order.

pub mod bulk;
mod bulk_chunk;
mod bulk_upload;
pub mod catalog;
pub mod check;
pub mod chunk;
mod clean_merge;
mod clock;
mod commit;
mod compact;
mod compact_source;
pub mod conflict;
mod count;
pub mod cypress;
pub mod error;
mod external_sort;
pub mod files;
mod flush;
pub mod io;
pub mod kernel;
pub mod key_filter;
pub mod log;
pub mod partitioning;
mod piece_batches;
pub mod progress;
pub mod queue;
mod read;
mod record_paths;
mod refresh;
mod repair;
mod replay;
mod row_group_decode;
pub mod scan;
pub mod scan_plan;
mod scan_task;
mod schema_change;
mod snapshot_at;
mod sort_keys;
mod state;
mod state_invariants;
pub mod static_table;
pub mod store;
pub mod stream;
pub mod tablets;
#[cfg(test)]
mod test_tables;
pub mod transaction;
mod validate;
mod write;

/// The kernel's modules that are part of the public API keep their paths at the crate root.
pub use kernel::{
    checksum, codec, compaction_policy, mvcc, retention, row_group_filter, timestamp, ttl,
};

pub use bulk::BulkWrite;
pub use check::{CheckReport, Damage};
pub use clock::{Clock, Fresh, IdGenerator, ManualClock, ProcessIds, SeededIds, SystemClock};
pub use commit::MAX_READ_AHEAD_NANOS;
pub use conflict::LockMode;
pub use error::{Error, Result};
pub use io::cache_entries::CacheAdmission;
pub use io::disk::{Disk, Durability, OsDisk};
pub use io::{checkpoint, in_memory, log_store};
pub use kernel::catalog::{
    canonical_attribute, validate_path, AttributeValue, TableEntry, TableOptions, MAX_PATH_BYTES,
    MAX_PATH_DEPTH, MOUNT_CONFIG_KEYS, WRITABLE_ATTRIBUTES,
};
pub use kernel::chunk_ref::{ChunkRef, Cleanliness, RowGroupRef};
pub use kernel::key_range::PivotKey;
pub use kernel::mvcc::WriteKind;
pub use kernel::retention::Retention;
pub use kernel::row_group_filter::{AllOf, ColumnStatistics, RowGroupFilter};
pub use kernel::timestamp::Timestamp;
pub use queue::QueueTablet;
pub use read::LookupStatistics;
pub use repair::RepairReport;
pub use scan::{KeyBound, KeyRange, ScanStatistics, TabletRows};
pub use scan_task::ScanTask;
pub use store::{RowValues, Store, StoreOptions, GC_GRACE_MS};
pub use stream::{Prefetch, ScanStream, Snapshot, StreamRead, TableScan};
pub use tablets::{Reshard, TabletCommand, TabletState};
pub use transaction::TransactionInfo;
