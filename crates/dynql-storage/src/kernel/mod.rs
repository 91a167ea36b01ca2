//! The storage kernel: the mechanisms that need no I/O, kept pure so that they can be tested
//! against simple models and replayed deterministically (see
//! `docs/design/0011-storage-layers.md`).
//!
//! A module here names no object store, no async runtime, no clock of its own and no
//! [`Store`](crate::Store); it uses only other kernel modules, [`crate::error`],
//! `dynql-core`, Arrow and Parquet's in-memory types. `tests/kernel_is_pure.rs` checks this.
//!
//! Holds so far: the catalog's types and the rules of their attributes (`catalog`), tablet
//! states and pivot keys, the settings of key filters and in-memory tables and the xor filter
//! itself, a static table's rows as the catalog records them, auto-partitioning's plans,
//! version retention and the compaction policy, timestamps and MVCC version resolution, the
//! chunk references the catalog keeps and the key order of versions, key ranges and key
//! search, the merge of version runs, the newest version of each key across clean layers (in
//! key order, or as the rows each layer keeps), TTL rules, compression codecs, checksums, the
//! row-group and page-index pruning rules, and batch weights.

pub mod catalog;
pub mod checksum;
pub mod chunk_ref;
pub mod codec;
pub mod compaction_policy;
pub mod in_memory_mode;
pub mod key_filter_settings;
pub mod key_range;
pub mod key_search;
pub(crate) mod layer_dedup;
pub(crate) mod layer_merge;
pub mod merge;
pub mod mvcc;
pub mod page_filter;
pub mod page_index;
pub mod partitioning;
pub mod pivots;
pub mod retention;
pub mod row_group_filter;
pub mod static_rows;
pub mod tablet_state;
pub mod timestamp;
pub mod ttl;
pub mod weight;
pub(crate) mod xor_filter;
