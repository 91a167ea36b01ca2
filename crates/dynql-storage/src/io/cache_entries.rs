//! What the chunk cache ([`crate::io::chunk_cache`]) holds and its bookkeeping: units of a
//! chunk by path, least-recently-used eviction by a budget of bytes, and admission. Once the
//! budget is reached, a unit is admitted only when asked for a second time: a one-pass scan
//! larger than the cache then leaves it as it was (and costs no eviction per row group),
//! while units read again (a join's lookups, a query run again) still come in. A reader that
//! knows it will read a unit again (a row group reaching past the piece of a scan that reads
//! it) has it admitted at once. A cache for one command ([`CacheAdmission::SecondRead`])
//! asks for the second read even while it has room: what one pass reads once is never read
//! again there, and holding it would only add to the command's peak memory.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::ArrayRef;
use parquet::arrow::arrow_reader::ArrowReaderMetadata;

use crate::kernel::mvcc::RowDelta;
use crate::kernel::page_index::KeySegments;

/// Units remembered as asked for once and not admitted, at most (8 bytes each).
const ASKED_ONCE: usize = 1 << 16;

/// The unit index of a whole chunk.
pub(crate) const WHOLE: usize = usize::MAX;

/// The rows of a unit that is a whole row group (or chunk).
pub(crate) const ALL_ROWS: (usize, usize) = (0, usize::MAX);

/// What a cache unit holds of a chunk or row group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum What {
    /// Its versions as rows, for merges.
    Versions,
    /// Whether it is clean, found by decoding its version columns (for chunks that do not
    /// record it).
    Clean,
    /// One table column, byte strings as views or as `Binary`.
    Column { index: usize, views: bool },
}

/// A cached unit of one chunk: (row group or [`WHOLE`], what, the row window `[start, end)`
/// of the row group, or [`ALL_ROWS`]).
pub(crate) type Part = (usize, What, (usize, usize));

/// A row window of a row group, or all of it.
pub(crate) fn window_rows(window: &Option<std::ops::Range<usize>>) -> (usize, usize) {
    window
        .as_ref()
        .map(|w| (w.start, w.end))
        .unwrap_or(ALL_ROWS)
}

/// What a cache entry holds.
#[derive(Clone)]
pub(crate) enum Cached {
    Versions(Arc<Vec<RowDelta>>),
    /// Since when the unit is clean, if it is.
    Clean(Option<u64>),
    Column(CachedColumn),
}

/// A decoded column as the cache holds it, with its data weight
/// ([`crate::kernel::weight::column_weight`]) once asked for: a scan that hands on the
/// whole column (a row group read again, warm) then weighs it once, not on every read.
#[derive(Clone)]
pub(crate) struct CachedColumn {
    pub(crate) array: ArrayRef,
    weight: Arc<std::sync::OnceLock<u64>>,
}

impl CachedColumn {
    pub(crate) fn new(array: ArrayRef) -> CachedColumn {
        CachedColumn {
            array,
            weight: Arc::default(),
        }
    }

    /// The column's data weight, weighed on the first call.
    pub(crate) fn weight(&self) -> u64 {
        *self
            .weight
            .get_or_init(|| crate::kernel::weight::column_weight(self.array.as_ref()))
    }
}

impl Cached {
    /// Estimated memory: Arrow's own count for arrays; for versions, a row of values plus
    /// the vector headers.
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Cached::Versions(v) => v.iter().map(|d| 64 + d.values.len() * 40).sum(),
            Cached::Clean(_) => 64,
            Cached::Column(c) => c.array.get_array_memory_size(),
        }
    }
}

/// A parsed footer and the block hashes it holds (chunks with a checksum).
pub(crate) type Footer = (ArrowReaderMetadata, Option<Arc<Vec<u64>>>);

/// When the chunk cache lets a decoded unit in (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CacheAdmission {
    /// On its first read while the cache has room, on its second once it is full: a
    /// session's next queries find what the last one read.
    #[default]
    FirstRead,
    /// Only on its second read, or when its reader says it will read it again (a row
    /// group shared by two pieces of a scan, a join's lookups): one command, whose single
    /// pass over a table would otherwise fill the cache for nothing.
    SecondRead,
}

/// A map keyed by our own chunk paths (no untrusted keys to guard against).
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

/// What is cached of one chunk.
#[derive(Default)]
pub(crate) struct ChunkEntries {
    /// Its units, with when each was last used.
    pub(crate) units: FastMap<Part, (Cached, u64)>,
    /// The page index's key segments of its row groups, so that the many key ranges of one
    /// scan (an IN list) are each a search over them.
    pub(crate) segments: FastMap<usize, Option<Arc<KeySegments>>>,
}

/// The cache's contents, by chunk path first: a scan looks up several units of one row group
/// at a time, and the path is hashed (and never copied) once for all of them.
#[derive(Default)]
pub(crate) struct Entries {
    pub(crate) chunks: FastMap<String, ChunkEntries>,
    /// Parsed footers, with the block hashes of chunks that have a checksum.
    pub(crate) footers: FastMap<String, Footer>,
    /// Units cached, over all chunks.
    pub(crate) units: usize,
    /// Row groups with key segments cached, over all chunks.
    pub(crate) segments: usize,
    pub(crate) bytes: usize,
    pub(crate) tick: u64,
    /// Hashes of the units asked for once while the cache was full, not admitted.
    pub(crate) asked_once: std::collections::HashSet<u64, foldhash::fast::FixedState>,
    pub(crate) admission: CacheAdmission,
}

impl Entries {
    /// The cached `parts` of chunk `path` (`None` where missing), marked as used now.
    pub(crate) fn get_all(
        &mut self,
        path: &str,
        parts: impl Iterator<Item = Part>,
    ) -> Vec<Option<Cached>> {
        self.tick += 1;
        let tick = self.tick;
        let mut units = self.chunks.get_mut(path).map(|c| &mut c.units);
        parts
            .map(|part| {
                let (v, used) = units.as_mut()?.get_mut(&part)?;
                *used = tick;
                Some(v.clone())
            })
            .collect()
    }

    /// The cached unit `part` of chunk `path`, marked as used now.
    pub(crate) fn get(&mut self, path: &str, part: Part) -> Option<Cached> {
        self.get_all(path, std::iter::once(part)).pop().flatten()
    }

    /// Whether unit `part` of chunk `path` is cached.
    pub(crate) fn contains(&self, path: &str, part: &Part) -> bool {
        self.chunks
            .get(path)
            .is_some_and(|c| c.units.contains_key(part))
    }

    /// Whether unit `part` of chunk `path` was asked for before (and not admitted then);
    /// remembers that it now is, when not.
    fn asked_before(&mut self, path: &str, part: &Part) -> bool {
        use std::hash::BuildHasher;
        let hash = foldhash::fast::FixedState::default().hash_one((path, part));
        if self.asked_once.remove(&hash) {
            return true;
        }
        if self.asked_once.len() >= ASKED_ONCE {
            self.asked_once.clear();
        }
        self.asked_once.insert(hash);
        false
    }

    /// Caches `value` as unit `part` of chunk `path` within `budget` bytes (a soft limit: a
    /// single larger unit is still cached), evicting the least recently used units; once the
    /// budget is reached (or always, with [`CacheAdmission::SecondRead`]), only a unit asked
    /// for before or that the reader says it will read again (see the module docs).
    pub(crate) fn admit(
        &mut self,
        budget: usize,
        path: &str,
        part: Part,
        value: Cached,
        read_again: bool,
    ) {
        let size = value.bytes();
        let full = self.bytes + size > budget && self.units > 0;
        let ask_twice = full || self.admission == CacheAdmission::SecondRead;
        if ask_twice && !read_again && !self.asked_before(path, &part) {
            return;
        }
        while self.bytes + size > budget && self.units > 0 {
            self.evict_oldest();
        }
        self.tick += 1;
        let tick = self.tick;
        self.bytes += size;
        self.units += 1;
        if let Some((old, _)) = self.chunk_mut(path).units.insert(part, (value, tick)) {
            self.bytes -= old.bytes();
            self.units -= 1;
        }
    }

    /// Drops the least recently used unit.
    fn evict_oldest(&mut self) {
        let oldest = self
            .chunks
            .iter()
            .flat_map(|(path, c)| {
                c.units
                    .iter()
                    .map(move |(part, (_, used))| (*used, path, *part))
            })
            .min_by_key(|(used, _, _)| *used)
            .map(|(_, path, part)| (path.clone(), part));
        let Some((path, part)) = oldest else {
            return;
        };
        if let Some(chunk) = self.chunks.get_mut(&path) {
            if let Some((v, _)) = chunk.units.remove(&part) {
                self.bytes -= v.bytes();
                self.units -= 1;
            }
            if chunk.units.is_empty() && chunk.segments.is_empty() {
                self.chunks.remove(&path);
            }
        }
    }

    /// What is cached of chunk `path`, made empty if nothing is.
    pub(crate) fn chunk_mut(&mut self, path: &str) -> &mut ChunkEntries {
        if !self.chunks.contains_key(path) {
            self.chunks
                .insert(path.to_string(), ChunkEntries::default());
        }
        self.chunks.get_mut(path).expect("inserted above")
    }

    /// Forgets every row group's key segments.
    pub(crate) fn clear_segments(&mut self) {
        self.chunks.retain(|_, c| {
            c.segments.clear();
            !c.units.is_empty()
        });
        self.segments = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PART: Part = (WHOLE, What::Versions, ALL_ROWS);

    #[test]
    fn the_least_recently_used_unit_goes_first_and_its_chunk_with_it() {
        let column = || {
            Cached::Column(CachedColumn::new(Arc::new(arrow::array::Int64Array::from(
                vec![7i64; 1000],
            ))))
        };
        let size = column().bytes();
        let budget = size * 5 / 2;
        let mut e = Entries::default();
        e.admit(budget, "a", PART, column(), false);
        e.admit(budget, "b", PART, column(), false);
        // "a" is used after "b" was cached: "b" is the one to go.
        assert!(e.get("a", PART).is_some());
        // Asked for once while the cache is full, "c" is not let in; asked again, it is.
        e.admit(budget, "c", PART, column(), false);
        assert!(!e.contains("c", &PART) && e.contains("b", &PART));
        e.admit(budget, "c", PART, column(), false);
        assert!(!e.contains("b", &PART));
        assert!(e.contains("a", &PART) && e.contains("c", &PART));
        assert_eq!((e.units, e.bytes), (2, 2 * size));
        assert!(!e.chunks.contains_key("b"));
    }

    #[test]
    fn room_admits_at_once_and_a_unit_larger_than_the_budget_alone() {
        let column = |n: usize| {
            Cached::Column(CachedColumn::new(Arc::new(arrow::array::Int64Array::from(
                vec![1i64; n],
            ))))
        };
        let mut e = Entries::default();
        let big = column(10_000);
        let budget = big.bytes() / 2;
        // Nothing cached: the larger unit comes in on its first ask (a soft limit).
        e.admit(budget, "big", PART, big, false);
        assert!(e.contains("big", &PART));
        // Full now: a one-pass read of many units leaves it as it was.
        for i in 0..100 {
            e.admit(budget, &format!("once{i}"), PART, column(10), false);
        }
        assert!(e.contains("big", &PART) && e.units == 1);
        // A unit its reader will read again comes in at once.
        e.admit(budget, "again", PART, column(10), true);
        assert!(e.contains("again", &PART));
    }

    #[test]
    fn a_one_command_cache_admits_only_what_is_read_again() {
        let column = || {
            Cached::Column(CachedColumn::new(Arc::new(arrow::array::Int64Array::from(
                vec![1i64; 10],
            ))))
        };
        let mut e = Entries {
            admission: CacheAdmission::SecondRead,
            ..Entries::default()
        };
        let budget = 1 << 20;
        // Room for all, yet a first read leaves nothing behind.
        for i in 0..10 {
            e.admit(budget, &format!("once{i}"), PART, column(), false);
        }
        assert_eq!((e.units, e.bytes), (0, 0));
        // Read a second time, or said to be read again, a unit comes in.
        e.admit(budget, "once3", PART, column(), false);
        e.admit(budget, "shared", PART, column(), true);
        assert!(e.contains("once3", &PART) && e.contains("shared", &PART));
        assert_eq!(e.units, 2);
    }
}
