//! The storage's I/O: the objects of a store (chunk files read in verified ranges, a
//! `file://` store's local files, listings that tolerate concurrent deletes), the commit log
//! behind the [`LogStore`](log_store::LogStore) trait, checkpoints and garbage collection,
//! and the caches of what was read (decoded chunks, lookup rows, in-memory tables). See
//! `docs/design/0011-storage-layers.md`: this layer may use [`crate::kernel`], and the
//! kernel never uses it.

pub(crate) mod cache_entries;
pub mod checkpoint;
pub(crate) mod chunk_cache;
pub mod disk;
pub(crate) mod garbage;
pub mod in_memory;
pub(crate) mod local_files;
pub mod log_store;
pub(crate) mod lookup_cache;
pub(crate) mod object_file;
pub(crate) mod objects;
