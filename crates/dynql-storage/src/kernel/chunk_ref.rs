//! What the catalog knows of a chunk without opening it ([`ChunkRef`], [`RowGroupRef`]:
//! key and timestamp bounds, cleanliness, checksum), and the key order of versions. Pure: the
//! encoding of chunks and their I/O are `crate::chunk`.

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use dynql_core::{compare_values, TableSchema, Value, ValueType, Yson};

use crate::error::{Error, Result};
use crate::kernel::checksum::ChunkChecksum;
use crate::kernel::mvcc::{RowDelta, WriteKind};
use crate::kernel::timestamp::Timestamp;

/// What the catalog knows of one key-sorted versioned chunk of a table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkRef {
    /// Object path of the Parquet file.
    pub path: String,
    /// Number of versions (rows of the file).
    pub rows: u64,
    /// Smallest and largest key in the chunk.
    #[serde(with = "key_serde")]
    pub min_key: Vec<Value>,
    #[serde(with = "key_serde")]
    pub max_key: Vec<Value>,
    /// Oldest and newest commit timestamp of a version in the chunk.
    pub min_timestamp: u64,
    pub max_timestamp: u64,
    /// Size of the file in bytes (lets readers fetch the footer without a HEAD request).
    #[serde(default)]
    pub bytes: u64,
    /// Key bounds of the Parquet row groups, in file order (`crate::chunk::ROW_GROUP_ROWS`
    /// versions each); empty for chunks written without them (then the file is one unit).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub row_groups: Vec<RowGroupRef>,
    /// How to verify the file ([`crate::kernel::checksum`]); absent for chunks written before
    /// checksums, which are read unverified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<ChunkChecksum>,
    /// The commit timestamp of every version of a bulk write's chunk ([`crate::bulk`]): its
    /// file, written before the commit, holds placeholders, and readers stamp the versions
    /// they decode with this ([`ChunkRef::stamp`]). Absent for every other chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_timestamp: Option<u64>,
    /// The chunk's key filters, in a file beside it ([`crate::key_filter`]); absent for
    /// chunks written without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_filter: Option<KeyFilterRef>,
}

/// What the catalog knows of a chunk's key filters (`crate::key_filter`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyFilterRef {
    /// Size of the filter file.
    pub bytes: u64,
    /// The key lengths filtered (the whole key's among them for lookups), longest first.
    pub lengths: Vec<usize>,
}

/// Key bounds of one row group of a chunk, and whether it is clean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowGroupRef {
    pub rows: u64,
    #[serde(with = "key_serde")]
    pub min_key: Vec<Value>,
    #[serde(with = "key_serde")]
    pub max_key: Vec<Value>,
    /// Whether the row group is clean, as its writer found it.
    #[serde(default, skip_serializing_if = "Cleanliness::is_unknown")]
    pub clean: Cleanliness,
    /// The columns holding a NaN in some version of the row group, as its writer found them
    /// (`None`: not recorded, so any double column may hold one). Parquet's statistics leave
    /// NaN out of their bounds, so a scan that prunes by them must know ([`nan_columns`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nan_columns: Option<Vec<usize>>,
}

/// Whether a row group is clean ([`clean_since`]): then its rows are the table's rows for
/// reads at or after a timestamp, and a scan decodes only the columns it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cleanliness {
    /// Not recorded (chunks written before it was): a scan finds out by decoding the
    /// version columns.
    #[default]
    Unknown,
    /// A key repeats, or a version is not a whole-row overwrite: a scan merges versions.
    Dirty,
    /// Clean, the newest version committed at this timestamp.
    Since(u64),
}

impl Cleanliness {
    fn is_unknown(&self) -> bool {
        *self == Cleanliness::Unknown
    }
}

/// Whether rows of `schema` can be clean at all ([`clean_since`]): a sorted table without a
/// double key column.
pub(crate) fn keys_can_be_clean(schema: &TableSchema) -> bool {
    schema.key_column_count() > 0
        && schema
            .key_columns()
            .iter()
            .all(|c| c.wire_type() != ValueType::Double)
}

/// The newest timestamp of `versions` (one row group, in key order then commit order) when
/// they are clean: every version overwrites a whole row (no update, delete or aggregate
/// delta, every column written) and no key repeats, so the versions are the table's rows for
/// any read at or after that timestamp. Double keys never count as clean: YT holds -0.0 and
/// 0.0 as one key, Arrow's comparable rows as two, so only the merge compares them.
pub(crate) fn clean_since(schema: &TableSchema, versions: &[&RowDelta]) -> Option<u64> {
    let key_count = schema.key_column_count();
    let clean = keys_can_be_clean(schema)
        && versions.iter().all(|d| {
            d.kind == WriteKind::Overwrite && !d.aggregate && d.values.iter().all(Option::is_some)
        })
        && versions
            .windows(2)
            .all(|w| compare_version_keys(w[0], w[1], key_count) == Ordering::Less);
    clean.then(|| versions.iter().map(|d| d.timestamp.0).max().unwrap_or(0))
}

/// The double columns holding a NaN in some of `versions`.
pub(crate) fn nan_columns(schema: &TableSchema, versions: &[&RowDelta]) -> Vec<usize> {
    (0..schema.columns().len())
        .filter(|&c| schema.columns()[c].wire_type() == ValueType::Double)
        .filter(|&c| {
            versions
                .iter()
                .any(|d| matches!(d.values.get(c), Some(Some(Value::Double(x))) if x.is_nan()))
        })
        .collect()
}

impl ChunkRef {
    /// Gives `versions`, decoded from this chunk's file, their commit timestamp if the chunk
    /// has one ([`ChunkRef::commit_timestamp`]); every reader of chunk versions calls this.
    pub(crate) fn stamp(&self, versions: &mut [RowDelta]) {
        if let Some(t) = self.commit_timestamp {
            for d in versions {
                d.timestamp = Timestamp(t);
            }
        }
    }

    /// Whether the chunk may hold versions of `key` visible at `timestamp`.
    pub fn may_contain(&self, key: &[Value], timestamp: u64) -> bool {
        self.min_timestamp <= timestamp
            && dynql_core::compare_rows(&self.min_key, key) != Ordering::Greater
            && dynql_core::compare_rows(key, &self.max_key) != Ordering::Greater
    }

    /// The row groups whose key bounds admit `key` (a full key), in key order: one, or
    /// more when the key's versions straddle them.
    pub(crate) fn row_groups_admitting(&self, key: &[Value]) -> std::ops::Range<usize> {
        let count = self.row_group_count();
        let (mut lo, mut hi) = (0, count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if dynql_core::compare_rows(self.row_group_bound(mid).1, key) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let mut end = lo;
        while end < count
            && dynql_core::compare_rows(self.row_group_bound(end).0, key) != Ordering::Greater
        {
            end += 1;
        }
        lo..end
    }

    /// Number of units a scan can decode separately (row groups, or 1).
    pub fn row_group_count(&self) -> usize {
        self.row_groups.len().max(1)
    }

    /// Key bounds of row group `g` (see [`ChunkRef::row_group_bounds`]).
    pub fn row_group_bound(&self, g: usize) -> (&[Value], &[Value]) {
        match self.row_groups.get(g) {
            Some(r) => (&r.min_key, &r.max_key),
            None => (&self.min_key, &self.max_key),
        }
    }

    /// Key bounds of the units a scan can decode separately: the row groups, or the whole
    /// chunk when it records none.
    pub fn row_group_bounds(&self) -> Vec<(&[Value], &[Value])> {
        if self.row_groups.is_empty() {
            vec![(&self.min_key, &self.max_key)]
        } else {
            self.row_groups
                .iter()
                .map(|g| (g.min_key.as_slice(), g.max_key.as_slice()))
                .collect()
        }
    }
}

/// Keys are stored as text YSON lists, which keeps uint64 and byte strings exact.
pub(crate) mod key_serde {
    use dynql_core::Value;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(key: &[Value], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::key_text(key))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Value>, D::Error> {
        let text = String::deserialize(d)?;
        super::key_from_text("chunk key", &text).map_err(serde::de::Error::custom)
    }
}

/// A key as a text YSON list.
pub(crate) fn key_text(key: &[Value]) -> String {
    dynql_core::yson::to_text(&Yson::List(key.iter().map(Value::to_yson).collect()))
}

/// Parses [`key_text`]'s output; `path` names the file in errors.
pub(crate) fn key_from_text(path: &str, text: &str) -> Result<Vec<Value>> {
    let corrupt = |m: String| Error::Corrupt {
        path: path.to_string(),
        message: m,
    };
    match dynql_core::yson::parse(text.as_bytes()).map_err(|e| corrupt(e.to_string()))? {
        Yson::List(items) => Ok(items
            .iter()
            .map(|y| match y {
                Yson::Entity => Value::Null,
                Yson::Int64(v) => Value::Int64(*v),
                Yson::Uint64(v) => Value::Uint64(*v),
                Yson::Double(v) => Value::Double(*v),
                Yson::Boolean(v) => Value::Boolean(*v),
                Yson::String(v) => Value::String(v.clone()),
                other => Value::Any(dynql_core::yson::to_text(other).into_bytes()),
            })
            .collect()),
        _ => Err(corrupt("a key is not a list".into())),
    }
}

/// Compares the keys (first `key_count` values) of two versions in YT order.
pub(crate) fn compare_version_keys(a: &RowDelta, b: &RowDelta, key_count: usize) -> Ordering {
    for (x, y) in a.values[..key_count].iter().zip(&b.values[..key_count]) {
        let o = match (x, y) {
            (Some(x), Some(y)) => compare_values(x, y),
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// Compares a version's key with a key.
pub(crate) fn compare_version_key(d: &RowDelta, key: &[Value], key_count: usize) -> Ordering {
    for (x, y) in d.values[..key_count].iter().zip(key) {
        let o = match x {
            Some(x) => compare_values(x, y),
            None => Ordering::Less,
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    key_count.cmp(&key.len())
}

/// The key of a version (nulls for missing key values, which validated writes never have).
pub(crate) fn version_key(d: &RowDelta, key_count: usize) -> Vec<Value> {
    d.values[..key_count]
        .iter()
        .map(|v| v.clone().unwrap_or(Value::Null))
        .collect()
}
