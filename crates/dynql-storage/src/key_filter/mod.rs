//! Key filters: per row group of a chunk, an [xor filter](crate::kernel::xor_filter) of its keys (and of key
//! prefixes of chosen lengths), written beside the chunk's Parquet file as `<chunk>.kf`.
//! A lookup (or a select of key prefixes) asks the filters of the row groups whose key
//! bounds admit a key before decoding them: a key a filter rules out is certainly not there.
//! See `docs/design/0009-key-filters.md`.
//!
//! The file: `DQKF`, a format byte, the key lengths filtered, the row group count, then per
//! row group and length one xor filter (seed, block length, width, packed fingerprints),
//! and a farm hash of all that before it. Numbers are little-endian.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::ObjectStoreExt;

use dynql_core::farm_hash::{fingerprint_bytes, fingerprint_u128, fingerprint_u64};
use dynql_core::Value;

use crate::error::{Error, Result};
use crate::kernel::chunk_ref::{ChunkRef, KeyFilterRef};
use crate::store::Store;

pub use crate::kernel::key_filter_settings::{
    ChunkWriterSettings, KeyFilterSettings, DEFAULT_FALSE_POSITIVE_RATE,
};
use crate::kernel::xor_filter::XorFilter;

const MAGIC: &[u8; 4] = b"DQKF";
const FORMAT: u8 = 1;

/// Filters kept decoded at most, in bytes (a soft limit: past it the cache starts over).
const CACHE_BYTES: usize = 512 << 20;

/// The object path of a chunk's key filter file.
pub(crate) fn filter_path(chunk_path: &str) -> String {
    format!("{chunk_path}.kf")
}

/// The chunk a key filter file belongs to, if `path` names one.
pub(crate) fn filtered_chunk(path: &str) -> Option<&str> {
    path.strip_suffix(".kf")
}

/// The hashes of the prefixes of `key` of every length from 1 to `key.len()` (index
/// `n - 1` for length `n`). Equal keys (as YT compares them: -0.0 = 0.0, NaN = NaN) hash
/// alike; values of different types differ.
pub(crate) fn prefix_hashes(key: &[Value]) -> Vec<u64> {
    let mut acc = 0xdead_c0de_u64;
    key.iter()
        .enumerate()
        .map(|(i, v)| {
            acc = fingerprint_u128(acc, value_hash(v));
            fingerprint_u64(acc ^ (i as u64 + 1))
        })
        .collect()
}

/// The hash of the prefix of `key` of length `n` (see [`prefix_hashes`]).
pub(crate) fn prefix_hash(key: &[Value], n: usize) -> u64 {
    prefix_hashes(&key[..n])[n - 1]
}

fn value_hash(v: &Value) -> u64 {
    let (tag, hash) = match v {
        Value::Null => (0, 0),
        Value::Int64(x) => (1, fingerprint_u64(*x as u64)),
        Value::Uint64(x) => (2, fingerprint_u64(*x)),
        Value::Double(x) => {
            let bits = if *x == 0.0 {
                0
            } else if x.is_nan() {
                f64::NAN.to_bits()
            } else {
                x.to_bits()
            };
            (3, fingerprint_u64(bits))
        }
        Value::Boolean(b) => (4, u64::from(*b)),
        Value::String(s) => (5, fingerprint_bytes(s)),
        Value::Any(s) => (6, fingerprint_bytes(s)),
    };
    fingerprint_u128(tag, hash)
}

/// The key filters of one chunk: per row group, one filter per filtered key length.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChunkKeyFilter {
    lengths: Vec<usize>,
    groups: Vec<Vec<XorFilter>>,
}

impl ChunkKeyFilter {
    /// Whether the filters let the prefix of length `n` with hash `hash` through for row
    /// group `group`: `false` only when it is certainly not there. A length without a
    /// filter lets everything through.
    pub(crate) fn may_contain(&self, group: usize, n: usize, hash: u64) -> bool {
        match (
            self.lengths.iter().position(|&l| l == n),
            self.groups.get(group),
        ) {
            (Some(i), Some(filters)) => filters[i].contains(hash),
            _ => true,
        }
    }

    fn bytes(&self) -> usize {
        self.groups
            .iter()
            .flatten()
            .map(|f| f.words.len() * 8 + 32)
            .sum()
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.bytes() + 64);
        out.extend_from_slice(MAGIC);
        out.push(FORMAT);
        out.extend_from_slice(&(self.lengths.len() as u32).to_le_bytes());
        for &n in &self.lengths {
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
        out.extend_from_slice(&(self.groups.len() as u32).to_le_bytes());
        for f in self.groups.iter().flatten() {
            out.extend_from_slice(&f.seed.to_le_bytes());
            out.extend_from_slice(&f.block_length.to_le_bytes());
            out.push(f.width);
            for w in &f.words {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
        let hash = fingerprint_bytes(&out);
        out.extend_from_slice(&hash.to_le_bytes());
        out
    }

    fn decode(path: &str, data: &[u8]) -> Result<ChunkKeyFilter> {
        let corrupt = |message: &str| Error::Corrupt {
            path: path.to_string(),
            message: format!("key filter: {message}"),
        };
        let Some(body_len) = data.len().checked_sub(8) else {
            return Err(corrupt("truncated"));
        };
        let (body, hash) = data.split_at(body_len);
        if fingerprint_bytes(body).to_le_bytes() != hash {
            return Err(corrupt("checksum mismatch"));
        }
        let mut r = Reader { data: body, at: 0 };
        if r.take(4).ok_or_else(|| corrupt("truncated"))? != MAGIC {
            return Err(corrupt("not a key filter file"));
        }
        if r.u8() != Some(FORMAT) {
            return Err(corrupt("unknown format"));
        }
        let bad = || corrupt("truncated or malformed");
        let count = r.u32().ok_or_else(bad)? as usize;
        let lengths = (0..count)
            .map(|_| r.u32().map(|n| n as usize).ok_or_else(bad))
            .collect::<Result<Vec<_>>>()?;
        let group_count = r.u32().ok_or_else(bad)? as usize;
        let mut groups = Vec::with_capacity(group_count.min(1 << 20));
        for _ in 0..group_count {
            let mut filters = Vec::with_capacity(lengths.len());
            for _ in &lengths {
                let seed = r.u64().ok_or_else(bad)?;
                let block_length = r.u32().ok_or_else(bad)?;
                let width = r.u8().ok_or_else(bad)?;
                if !(1..=32).contains(&width) || block_length == 0 {
                    return Err(bad());
                }
                let words = (0..XorFilter::word_count(block_length, width))
                    .map(|_| r.u64().ok_or_else(bad))
                    .collect::<Result<Vec<_>>>()?;
                filters.push(XorFilter {
                    seed,
                    block_length,
                    width,
                    words,
                });
            }
            groups.push(filters);
        }
        if r.at != body.len() {
            return Err(bad());
        }
        Ok(ChunkKeyFilter { lengths, groups })
    }
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let out = self.data.get(self.at..end)?;
        self.at = end;
        Some(out)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
}

/// Builds a chunk's key filters as its versions are written, row group by row group.
#[derive(Debug)]
pub(crate) struct KeyFilterBuilder {
    /// (key length, fingerprint width), longest first.
    filters: Vec<(usize, u8)>,
    /// Hashes of the current row group, per filter.
    pending: Vec<Vec<u64>>,
    groups: Vec<Vec<XorFilter>>,
}

impl KeyFilterBuilder {
    /// A builder for `filters` ([`ChunkWriterSettings::filters`]); `None` when empty.
    pub(crate) fn new(filters: Vec<(usize, u8)>) -> Option<KeyFilterBuilder> {
        (!filters.is_empty()).then(|| KeyFilterBuilder {
            pending: vec![Vec::new(); filters.len()],
            filters,
            groups: Vec::new(),
        })
    }

    /// Adds the key of a version of the current row group.
    pub(crate) fn add(&mut self, key: &[Value]) {
        let longest = self.filters[0].0.min(key.len());
        let hashes = prefix_hashes(&key[..longest]);
        for ((n, _), pending) in self.filters.iter().zip(&mut self.pending) {
            if let Some(h) = n.checked_sub(1).and_then(|i| hashes.get(i)) {
                // Versions of one key are adjacent: keep one hash of them.
                if pending.last() != Some(h) {
                    pending.push(*h);
                }
            }
        }
    }

    /// Closes the current row group.
    pub(crate) fn finish_group(&mut self) {
        let filters = self
            .filters
            .iter()
            .zip(&mut self.pending)
            .map(|((_, width), pending)| {
                let f = XorFilter::build(pending, *width);
                pending.clear();
                f
            })
            .collect();
        self.groups.push(filters);
    }

    /// The filter file's bytes and reference, once every row group is closed.
    pub(crate) fn finish(self) -> (Bytes, KeyFilterRef) {
        let filter = ChunkKeyFilter {
            lengths: self.filters.iter().map(|(n, _)| *n).collect(),
            groups: self.groups,
        };
        let bytes = Bytes::from(filter.encode());
        let reference = KeyFilterRef {
            bytes: bytes.len() as u64,
            lengths: filter.lengths,
        };
        (bytes, reference)
    }

    /// Uploads the filter file of the chunk at `chunk_path`.
    pub(crate) async fn upload(
        self,
        objects: &dyn object_store::ObjectStore,
        chunk_path: &str,
    ) -> Result<KeyFilterRef> {
        let (bytes, reference) = self.finish();
        crate::chunk::put_encoded(objects, &filter_path(chunk_path), bytes).await?;
        Ok(reference)
    }
}

/// Decoded key filters by chunk path, shared by the clones of a [`Store`]; `None` for a
/// filter file found missing or damaged (fetched once, then the chunk is read without it).
#[derive(Debug, Default)]
pub(crate) struct KeyFilterCache {
    entries: Mutex<(HashMap<String, Option<Arc<ChunkKeyFilter>>>, usize)>,
}

/// Reads and checks the key filter file of `chunk` (which must have one).
///
/// # Errors
/// [`Error::Corrupt`] naming the filter file when it is missing, does not decode, or does
/// not match the chunk; other errors when the object store fails.
pub(crate) async fn load(
    objects: &dyn object_store::ObjectStore,
    chunk: &ChunkRef,
) -> Result<ChunkKeyFilter> {
    let path = filter_path(&chunk.path);
    let data = match objects.get(&ObjectPath::from(path.as_str())).await {
        Ok(got) => got.bytes().await?,
        Err(object_store::Error::NotFound { .. }) => {
            return Err(Error::Corrupt {
                path,
                message: "the key filter file is missing".into(),
            })
        }
        Err(e) => return Err(e.into()),
    };
    let filter = ChunkKeyFilter::decode(&path, &data)?;
    if filter.groups.len() != chunk.row_group_count() {
        return Err(Error::Corrupt {
            path,
            message: format!(
                "key filter holds {} row groups, the chunk {}",
                filter.groups.len(),
                chunk.row_group_count()
            ),
        });
    }
    Ok(filter)
}

impl Store {
    /// The key filters of `chunk`, from the cache or its filter file; `None` when it has none,
    /// or when its file is missing or damaged: a filter only ever lets a read skip row groups,
    /// so reading without it is always right (`dynql check` reports the file).
    pub(crate) async fn key_filter(&self, chunk: &ChunkRef) -> Result<Option<Arc<ChunkKeyFilter>>> {
        if chunk.key_filter.is_none() {
            return Ok(None);
        }
        if let Some(f) = self.key_filters.lock().0.get(&chunk.path) {
            return Ok(f.clone());
        }
        let filter = match load(self.objects.as_ref(), chunk).await {
            Ok(filter) => Some(Arc::new(filter)),
            Err(Error::Corrupt { .. }) => None,
            Err(e) => return Err(e),
        };
        let size = filter.as_ref().map_or(64, |f| f.bytes());
        let mut entries = self.key_filters.lock();
        if entries.1 + size > CACHE_BYTES {
            *entries = Default::default();
        }
        entries.1 += size;
        entries.0.insert(chunk.path.clone(), filter.clone());
        Ok(filter)
    }
}

impl KeyFilterCache {
    #[allow(clippy::type_complexity)]
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, (HashMap<String, Option<Arc<ChunkKeyFilter>>>, usize)> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Store {
    /// `in_range` (chunk, row group) pairs of a scan of `range` without those whose key
    /// filters rule the range out: when the range is every key of one prefix (a point of
    /// the key, or of a prefix filtered by `key_filter_prefix`). Counts the chunks so
    /// skipped, and takes them and their row groups off the read counts.
    pub(crate) async fn drop_filtered_out(
        &self,
        data: &crate::state::TableData,
        range: &dynql_core::KeyRange,
        mut in_range: Vec<(usize, usize)>,
        statistics: &mut crate::scan::ScanStatistics,
    ) -> Result<Vec<(usize, usize)>> {
        let prefix = &range.lower.prefix;
        let n = prefix.len();
        let one_prefix = n > 0
            && !range.lower.after
            && range.upper.after
            && range.upper.prefix.len() == n
            && dynql_core::compare_rows(prefix, &range.upper.prefix).is_eq();
        if !one_prefix {
            return Ok(in_range);
        }
        let hash = prefix_hash(prefix, n);
        let mut chunks: Vec<usize> = in_range.iter().map(|&(ci, _)| ci).collect();
        chunks.dedup();
        for ci in chunks {
            let chunk = &data.chunks[ci];
            if !chunk
                .key_filter
                .as_ref()
                .is_some_and(|f| f.lengths.contains(&n))
            {
                continue;
            }
            let Some(filter) = self.key_filter(chunk).await? else {
                continue;
            };
            let before = in_range.len();
            in_range.retain(|&(c, g)| c != ci || filter.may_contain(g, n, hash));
            let dropped = before - in_range.len();
            statistics.row_groups.0 = statistics.row_groups.0.saturating_sub(dropped);
            if dropped > 0 && !in_range.iter().any(|&(c, _)| c == ci) {
                statistics.chunks_skipped_by_key_filter += 1;
                statistics.chunks.0 = statistics.chunks.0.saturating_sub(1);
            }
        }
        Ok(in_range)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(a: i64, b: &str) -> Vec<Value> {
        vec![Value::Int64(a), Value::String(b.as_bytes().to_vec())]
    }

    #[test]
    fn equal_keys_hash_alike_and_types_apart() {
        assert_eq!(
            prefix_hashes(&[Value::Double(-0.0)]),
            prefix_hashes(&[Value::Double(0.0)])
        );
        assert_eq!(
            prefix_hashes(&[Value::Double(f64::NAN)]),
            prefix_hashes(&[Value::Double(-f64::NAN)])
        );
        assert_ne!(
            prefix_hashes(&[Value::Int64(1)]),
            prefix_hashes(&[Value::Uint64(1)])
        );
        let k = key(1, "a");
        assert_eq!(prefix_hash(&k, 1), prefix_hashes(&k[..1])[0]);
        assert_ne!(prefix_hash(&k, 1), prefix_hash(&k, 2));
    }

    #[test]
    fn a_built_filter_lets_its_keys_and_prefixes_through_and_survives_encoding() {
        let mut b = KeyFilterBuilder::new(vec![(2, 8), (1, 8)]).unwrap();
        for g in 0..3i64 {
            for i in 0..500 {
                b.add(&key(g * 1000 + i, "x"));
                b.add(&key(g * 1000 + i, "x"));
            }
            b.finish_group();
        }
        let (bytes, reference) = b.finish();
        assert_eq!(reference.lengths, vec![2, 1]);
        let f = ChunkKeyFilter::decode("c.kf", &bytes).unwrap();
        for g in 0..3usize {
            for i in 0..500 {
                let k = key(g as i64 * 1000 + i, "x");
                assert!(f.may_contain(g, 2, prefix_hash(&k, 2)));
                assert!(f.may_contain(g, 1, prefix_hash(&k, 1)));
            }
        }
        // Absent keys are mostly ruled out (1 in 256 gets through).
        let through = (0..500)
            .filter(|i| f.may_contain(0, 2, prefix_hash(&key(*i, "y"), 2)))
            .count();
        assert!(through < 15, "{through}");
        // Lengths without a filter let everything through.
        assert!(f.may_contain(0, 3, 0));
    }

    #[test]
    fn damaged_filter_files_are_corrupt_not_wrong() {
        let mut b = KeyFilterBuilder::new(vec![(1, 8)]).unwrap();
        b.add(&[Value::Int64(1)]);
        b.finish_group();
        let (bytes, _) = b.finish();
        let mut damaged = bytes.to_vec();
        damaged[10] ^= 1;
        for data in [&damaged[..], &bytes[..bytes.len() - 1], &[][..]] {
            let e = ChunkKeyFilter::decode("c.kf", data).unwrap_err();
            assert!(matches!(e, Error::Corrupt { .. }), "{e}");
        }
    }
}
