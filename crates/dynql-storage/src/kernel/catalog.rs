//! The catalog's types: what a store records of its tables (schema, tablets, retention,
//! attributes), the rules of `set` on their attributes, and the paths they live at. The
//! operations that change the catalog (create, remove, copy, `set`) are `crate::catalog`'s.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use dynql_core::{TableSchema, Value};

use crate::error::{Error, Result};

/// Attributes given when a table is created, beyond its schema.
#[derive(Debug, Clone, Default)]
pub struct TableOptions {
    /// Number of tablets (`tablet_count`).
    pub tablet_count: Option<usize>,
    /// Pivot keys (`pivot_keys`), first one empty.
    pub pivot_keys: Option<Vec<Vec<Value>>>,
    /// Version retention (`min_data_versions`, `max_data_versions`, `min_data_ttl`,
    /// `max_data_ttl`).
    pub retention: crate::kernel::retention::Retention,
    /// First row index of each tablet of an ordered table (`trimmed_row_counts`; needs
    /// `tablet_count` of the same length).
    pub trimmed_row_counts: Option<Vec<u64>>,
    /// `commit_ordering` (`weak` or `strong`).
    pub commit_ordering: Option<String>,
    /// `mount_config/max_ordered_tablet_data_weight`: most data weight a tablet of an ordered
    /// table may hold.
    pub max_ordered_tablet_data_weight: Option<u64>,
    /// `mount_config/enable_compaction_and_partitioning` (default true): whether the table
    /// compacts on its own ([`crate::kernel::compaction_policy`]).
    pub enable_compaction_and_partitioning: Option<bool>,
    /// `auto_partitioning_*` ([`crate::partitioning`]).
    pub auto_partitioning: crate::kernel::partitioning::AutoPartitioning,
    /// `auto_compaction_period` in milliseconds (positive).
    pub auto_compaction_period: Option<u64>,
    /// `mount_config/lookup_cache_rows_ratio` (0 to 1).
    pub lookup_cache_rows_ratio: Option<f64>,
    /// `mount_config/enable_lookup_cache_by_default`.
    pub enable_lookup_cache_by_default: Option<bool>,
    /// `mount_config/lookup_cache_rows_per_tablet` (deprecated in YT, still honoured).
    pub lookup_cache_rows_per_tablet: Option<u64>,
    /// `chunk_writer`: key filters written with the table's chunks ([`crate::key_filter`]).
    pub chunk_writer: Option<crate::kernel::key_filter_settings::ChunkWriterSettings>,
    /// `mount_config/enable_key_filter_for_lookup`: lookups and key-prefix selects consult
    /// the chunks' key filters.
    pub enable_key_filter_for_lookup: Option<bool>,
    /// `in_memory_mode` ([`crate::io::in_memory`]).
    pub in_memory_mode: Option<crate::kernel::in_memory_mode::InMemoryMode>,
    /// `compression_codec`: the codec of the table's chunks ([`crate::kernel::codec`]).
    pub compression_codec: Option<crate::kernel::codec::CompressionCodec>,
    /// `ttl`: `Interval("P1D") ON created_at` ([`crate::kernel::ttl`]).
    pub ttl: Option<String>,
    /// Attributes dynql gives no meaning to, kept on the table (name to YSON text).
    pub custom_attributes: BTreeMap<String, String>,
    /// A static table (`dynamic=%false`, YT's default): rows written whole by
    /// [`Store::start_static_write`](crate::Store::start_static_write), read by
    /// [`Store::table_for_read`](crate::Store::table_for_read).
    pub static_table: bool,
    /// Create missing parent directories (`create -r`); without it the parent must exist.
    pub recursive: bool,
    /// A table already there is not an error (`create -i`).
    pub ignore_existing: bool,
    /// The master transaction to create it in (it appears to others at commit).
    pub transaction: Option<String>,
}

/// What the catalog records of a table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TableEntry {
    pub id: String,
    pub schema: TableSchema,
    pub tablet_count: usize,
    /// Pivot keys, one per tablet (sorted tables).
    #[serde(default)]
    pub pivot_keys: Vec<crate::kernel::key_range::PivotKey>,
    /// Version retention applied by compaction.
    #[serde(default)]
    pub retention: crate::kernel::retention::Retention,
    /// Initial trimmed row counts of an ordered table's tablets (from `trimmed_row_counts`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trimmed_row_counts: Vec<u64>,
    /// Mounted (default: tables are created mounted), frozen or unmounted.
    #[serde(default)]
    pub tablet_state: crate::kernel::tablet_state::TabletState,
    /// `commit_ordering`: `weak` (default) or `strong`; with one totally ordered log both
    /// append rows in commit order.
    #[serde(default = "weak")]
    pub commit_ordering: String,
    /// `mount_config/max_ordered_tablet_data_weight`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ordered_tablet_data_weight: Option<u64>,
    /// False after `alter-table --dynamic false`: the table is static, and neither
    /// `select_rows` nor writes accept it.
    #[serde(default = "yes")]
    pub dynamic: bool,
    /// `mount_config/enable_compaction_and_partitioning`: whether the table compacts on its
    /// own ([`crate::kernel::compaction_policy`]); `compact` and checkpoints compact it regardless.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub enable_compaction_and_partitioning: bool,
    /// `auto_partitioning_*`: whether and how the table's tablets split and merge by size
    /// ([`crate::partitioning`]).
    #[serde(
        default,
        skip_serializing_if = "crate::kernel::partitioning::AutoPartitioning::is_default"
    )]
    pub auto_partitioning: crate::kernel::partitioning::AutoPartitioning,
    /// `auto_compaction_period` (milliseconds): a full compaction once the last one is this
    /// old ([`crate::kernel::retention`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_compaction_period: Option<u64>,
    /// `forced_compaction_revision`: setting it compacts the table fully at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forced_compaction_revision: Option<u64>,
    /// `mount_config/lookup_cache_rows_ratio`: the share of the table's versions the lookup
    /// row cache holds (0: no cache; [`crate::io::lookup_cache`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lookup_cache_rows_ratio: f64,
    /// `mount_config/enable_lookup_cache_by_default`: lookups that do not say use the cache.
    #[serde(default, skip_serializing_if = "is_false")]
    pub enable_lookup_cache_by_default: bool,
    /// `mount_config/lookup_cache_rows_per_tablet` (deprecated in YT, which still honours it):
    /// rows the lookup cache holds per tablet, besides the share `lookup_cache_rows_ratio`
    /// gives (the larger room wins).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub lookup_cache_rows_per_tablet: u64,
    /// `chunk_writer`: the key filters new chunks carry ([`crate::key_filter`]).
    #[serde(default, skip_serializing_if = "is_default")]
    pub chunk_writer: crate::kernel::key_filter_settings::ChunkWriterSettings,
    /// `mount_config/enable_key_filter_for_lookup`: lookups and key-prefix selects skip the
    /// row groups whose key filters rule their keys out.
    #[serde(default, skip_serializing_if = "is_false")]
    pub enable_key_filter_for_lookup: bool,
    /// `in_memory_mode`: a long-lived process holds the table's chunks in memory
    /// ([`crate::io::in_memory`]).
    #[serde(
        default,
        skip_serializing_if = "crate::kernel::in_memory_mode::InMemoryMode::is_none"
    )]
    pub in_memory_mode: crate::kernel::in_memory_mode::InMemoryMode,
    /// `compression_codec`: the codec new chunks of the table are written with
    /// ([`crate::kernel::codec::CompressionCodec`]); absent (tables made before it, or left at the
    /// default) means [`crate::kernel::codec::CompressionCodec::DEFAULT`].
    #[serde(
        default,
        skip_serializing_if = "crate::kernel::codec::CompressionCodec::is_default"
    )]
    pub compression_codec: crate::kernel::codec::CompressionCodec,
    /// `ttl`: rows expire a time after the value of a column ([`crate::kernel::ttl`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<crate::kernel::ttl::ColumnTtl>,
    /// Custom attributes (`set //t/@NAME`): name to YSON text.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub custom_attributes: BTreeMap<String, String>,
    /// A static table's rows: its chunks in row order ([`crate::static_table`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub static_chunks: Vec<crate::kernel::static_rows::StaticChunk>,
    /// Only in a master transaction's version of a static table: how its rows differ from
    /// the version it branched from (`None`: they do not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staged_rows: Option<crate::kernel::static_rows::StagedRows>,
}

impl TableEntry {
    /// A static table with `schema` and default settings (tests build entries with it).
    #[cfg(test)]
    pub(crate) fn new_static(id: &str, schema: TableSchema) -> TableEntry {
        TableEntry {
            id: id.into(),
            schema,
            tablet_count: 1,
            pivot_keys: vec![],
            retention: Default::default(),
            trimmed_row_counts: vec![],
            tablet_state: Default::default(),
            commit_ordering: "weak".into(),
            max_ordered_tablet_data_weight: None,
            dynamic: false,
            enable_compaction_and_partitioning: true,
            auto_partitioning: Default::default(),
            auto_compaction_period: None,
            forced_compaction_revision: None,
            lookup_cache_rows_ratio: 0.0,
            enable_lookup_cache_by_default: false,
            lookup_cache_rows_per_tablet: 0,
            chunk_writer: Default::default(),
            enable_key_filter_for_lookup: false,
            in_memory_mode: Default::default(),
            compression_codec: Default::default(),
            ttl: None,
            custom_attributes: BTreeMap::new(),
            static_chunks: vec![],
            staged_rows: None,
        }
    }
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

fn is_zero(f: &f64) -> bool {
    *f == 0.0
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

fn is_true(b: &bool) -> bool {
    *b
}

fn weak() -> String {
    "weak".into()
}

fn yes() -> bool {
    true
}

/// The value of a writable attribute (`set PATH/@NAME`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AttributeValue {
    Number(u64),
    Text(String),
    Boolean(bool),
    /// A fraction (`mount_config/lookup_cache_rows_ratio`); integers are `Number`.
    Double(f64),
    /// `remove PATH/@NAME`: back to the default (`ttl`).
    Removed,
}

/// Attributes `set` can change: the retention settings, `commit_ordering`,
/// `mount_config/max_ordered_tablet_data_weight` and
/// `mount_config/enable_compaction_and_partitioning`.
pub const WRITABLE_ATTRIBUTES: &[&str] = &[
    "min_data_versions",
    "max_data_versions",
    "min_data_ttl",
    "max_data_ttl",
    "commit_ordering",
    "mount_config/max_ordered_tablet_data_weight",
    "mount_config/enable_compaction_and_partitioning",
    "auto_partitioning_by_size",
    "auto_partitioning_partition_size_mb",
    "auto_partitioning_min_partitions_count",
    "auto_partitioning_max_partitions_count",
    "auto_compaction_period",
    "mount_config/auto_compaction_period",
    "forced_compaction_revision",
    "mount_config/lookup_cache_rows_ratio",
    "mount_config/enable_lookup_cache_by_default",
    "mount_config/enable_key_filter_for_lookup",
    "mount_config/lookup_cache_rows_per_tablet",
    "max_ordered_tablet_data_weight",
    "enable_compaction_and_partitioning",
    "lookup_cache_rows_ratio",
    "enable_lookup_cache_by_default",
    "enable_key_filter_for_lookup",
    "lookup_cache_rows_per_tablet",
    "key_bloom_filter",
    "chunk_writer",
    "in_memory_mode",
    "compression_codec",
    "ttl",
];

/// The `mount_config` settings dynql honours. YT lets each be set at the table's top level
/// too (`set //t/@lookup_cache_rows_ratio 0.01`): both names mean the same setting.
pub const MOUNT_CONFIG_KEYS: &[&str] = &[
    "max_ordered_tablet_data_weight",
    "enable_compaction_and_partitioning",
    "enable_key_filter_for_lookup",
    "auto_compaction_period",
    "lookup_cache_rows_ratio",
    "enable_lookup_cache_by_default",
    "lookup_cache_rows_per_tablet",
];

/// `name` with a mount-config setting given at the table's top level written as
/// `mount_config/NAME` (`auto_compaction_period` stays: it was always top-level too).
pub fn canonical_attribute(name: &str) -> std::borrow::Cow<'_, str> {
    if name != "auto_compaction_period" && MOUNT_CONFIG_KEYS.contains(&name) {
        std::borrow::Cow::Owned(format!("mount_config/{name}"))
    } else {
        std::borrow::Cow::Borrowed(name)
    }
}

/// Applies a writable attribute to a catalog entry, checking it (the same check runs when
/// the change is made and when it is replayed).
pub(crate) fn set_attribute(
    entry: &mut TableEntry,
    name: &str,
    value: &AttributeValue,
) -> Result<()> {
    let number = || match value {
        AttributeValue::Number(n) => Ok(*n),
        AttributeValue::Text(t) => Err(Error::Invalid(format!(
            "Attribute {name:?} must be a non-negative integer, not {t:?}"
        ))),
        AttributeValue::Boolean(b) => Err(Error::Invalid(format!(
            "Attribute {name:?} must be a non-negative integer, not %{b}"
        ))),
        AttributeValue::Double(f) => Err(Error::Invalid(format!(
            "Attribute {name:?} must be a non-negative integer, not {f}"
        ))),
        AttributeValue::Removed => Err(removed_error(name)),
    };
    let canonical = canonical_attribute(name);
    let name = canonical.as_ref();
    let mut next = entry.clone();
    if crate::kernel::partitioning::ATTRIBUTES.contains(&name) {
        if !entry.schema.is_sorted() {
            return Err(Error::Invalid(format!(
                "Attribute {name:?} is for sorted tables: an ordered table's tablets are resharded by hand"
            )));
        }
        next.auto_partitioning.set(name, value)?;
        *entry = next;
        return Ok(());
    }
    if value == &AttributeValue::Removed && name != "ttl" {
        return Err(removed_error(name));
    }
    match name {
        "ttl" => {
            next.ttl = match value {
                AttributeValue::Removed => None,
                AttributeValue::Text(t) => Some(table_ttl(&entry.schema, t)?),
                _ => {
                    return Err(Error::Invalid(
                        "Attribute \"ttl\" must be a string: Interval(\"P1D\") ON <column>".into(),
                    ))
                }
            }
        }
        "min_data_versions" => next.retention.min_data_versions = number()?,
        "max_data_versions" => next.retention.max_data_versions = number()?,
        "min_data_ttl" => next.retention.min_data_ttl = number()?,
        "max_data_ttl" => next.retention.max_data_ttl = number()?,
        "auto_compaction_period" | "mount_config/auto_compaction_period" => match number()? {
            0 => {
                return Err(Error::Invalid(format!(
                    "Attribute {name:?} must be a positive number of milliseconds"
                )))
            }
            ms => next.auto_compaction_period = Some(ms),
        },
        "forced_compaction_revision" => next.forced_compaction_revision = Some(number()?),
        "mount_config/lookup_cache_rows_ratio" => {
            next.lookup_cache_rows_ratio = lookup_cache_rows_ratio(match value {
                AttributeValue::Double(f) => *f,
                AttributeValue::Number(n) => *n as f64,
                _ => f64::NAN,
            })?
        }
        "mount_config/enable_key_filter_for_lookup" => match value {
            AttributeValue::Boolean(b) => next.enable_key_filter_for_lookup = *b,
            _ => {
                return Err(Error::Invalid(format!(
                    "Attribute {name:?} must be %true or %false"
                )))
            }
        },
        "in_memory_mode" => match value {
            AttributeValue::Text(t) => {
                next.in_memory_mode = crate::kernel::in_memory_mode::InMemoryMode::parse(t)?
            }
            _ => {
                return Err(Error::Invalid(
                    "Attribute \"in_memory_mode\" must be none, compressed or uncompressed".into(),
                ))
            }
        },
        "compression_codec" => match value {
            AttributeValue::Text(t) => next.compression_codec = crate::kernel::codec::CompressionCodec::parse(t)?,
            _ => {
                return Err(Error::Invalid(format!(
                    "Attribute \"compression_codec\" must be a codec name: {}",
                    crate::kernel::codec::YT_CODEC_NAMES
                )))
            }
        },
        "chunk_writer" => {
            next.chunk_writer = crate::kernel::key_filter_settings::ChunkWriterSettings::from_yson(
                &attribute_yson(value),
                entry.schema.key_column_count(),
            )?
        }
        leaf if leaf.starts_with("chunk_writer/") => {
            next.chunk_writer = entry.chunk_writer.with(
                &leaf["chunk_writer/".len()..],
                attribute_yson(value),
                entry.schema.key_column_count(),
            )?
        }
        "mount_config/enable_lookup_cache_by_default" => match value {
            AttributeValue::Boolean(b) => next.enable_lookup_cache_by_default = *b,
            _ => {
                return Err(Error::Invalid(format!(
                    "Attribute {name:?} must be %true or %false"
                )))
            }
        },
        "mount_config/max_ordered_tablet_data_weight" => {
            next.max_ordered_tablet_data_weight = Some(number()?)
        }
        "mount_config/lookup_cache_rows_per_tablet" => {
            next.lookup_cache_rows_per_tablet = number()?
        }
        "mount_config/enable_compaction_and_partitioning" => match value {
            AttributeValue::Boolean(b) => next.enable_compaction_and_partitioning = *b,
            _ => {
                return Err(Error::Invalid(format!(
                    "Attribute {name:?} must be %true or %false"
                )))
            }
        },
        "commit_ordering" if !entry.dynamic => {
            return Err(Error::Invalid(
                "Attribute \"commit_ordering\" is for dynamic tables: a static table has no commits of its own".into(),
            ))
        }
        "key_bloom_filter" => {
            // YDB's name (seed 002) for what YT splits in two: writing key filters with new
            // chunks, and lookups consulting them.
            let enable = key_bloom_filter(value)?;
            let key_count = entry.schema.key_column_count();
            next.chunk_writer = entry.chunk_writer.with(
                "key_filter/enable",
                dynql_core::Yson::Boolean(enable),
                key_count,
            )?;
            next.enable_key_filter_for_lookup = enable;
        }
        "commit_ordering" => match value {
            AttributeValue::Text(t) if t == "weak" || t == "strong" => {
                next.commit_ordering = t.clone()
            }
            _ => {
                return Err(Error::Invalid(
                    "Attribute \"commit_ordering\" must be weak or strong".into(),
                ))
            }
        },
        other => {
            return Err(Error::Invalid(format!(
                "Attribute {other:?} cannot be set (writable: {})",
                WRITABLE_ATTRIBUTES.join(", ")
            )))
        }
    }
    let r = next.retention;
    if r.min_data_versions > r.max_data_versions || r.min_data_ttl > r.max_data_ttl {
        return Err(Error::Invalid(
            "min_data_versions must not exceed max_data_versions, nor min_data_ttl max_data_ttl"
                .into(),
        ));
    }
    *entry = next;
    Ok(())
}

fn removed_error(name: &str) -> Error {
    Error::Invalid(format!(
        "Attribute {name:?} cannot be removed (removable: ttl); set it to a new value instead"
    ))
}

/// Checks a `ttl` expression against a table's schema: TTL is for sorted tables.
pub(crate) fn table_ttl(schema: &TableSchema, text: &str) -> Result<crate::kernel::ttl::ColumnTtl> {
    if !schema.is_sorted() {
        return Err(Error::Invalid(
            "Attribute \"ttl\" is for sorted tables: an ordered table's rows leave by trimming"
                .into(),
        ));
    }
    crate::kernel::ttl::ColumnTtl::parse(text, schema)
}

/// An attribute value as YSON: text is parsed as YSON (maps and lists are set as their
/// text), or else kept as a string.
fn attribute_yson(value: &AttributeValue) -> dynql_core::Yson {
    use dynql_core::Yson;
    match value {
        AttributeValue::Number(n) => Yson::Int64(*n as i64),
        AttributeValue::Boolean(b) => Yson::Boolean(*b),
        AttributeValue::Double(f) => Yson::Double(*f),
        AttributeValue::Removed => Yson::Entity,
        AttributeValue::Text(t) => dynql_core::yson::parse(t.as_bytes())
            .unwrap_or_else(|_| Yson::String(t.as_bytes().to_vec())),
    }
}

/// `key_bloom_filter`: `ENABLED` or `DISABLED` (YDB's values; any case).
pub fn key_bloom_filter(value: &AttributeValue) -> Result<bool> {
    match value {
        AttributeValue::Text(t) if t.eq_ignore_ascii_case("enabled") => Ok(true),
        AttributeValue::Text(t) if t.eq_ignore_ascii_case("disabled") => Ok(false),
        AttributeValue::Boolean(b) => Ok(*b),
        _ => Err(Error::Invalid(
            "Attribute \"key_bloom_filter\" must be ENABLED or DISABLED".into(),
        )),
    }
}

/// Checks `mount_config/lookup_cache_rows_ratio`: a fraction from 0 to 1.
pub(crate) fn lookup_cache_rows_ratio(ratio: f64) -> Result<f64> {
    if (0.0..=1.0).contains(&ratio) {
        Ok(ratio)
    } else {
        Err(Error::Invalid(
            "mount_config/lookup_cache_rows_ratio must be a number from 0 to 1".into(),
        ))
    }
}

/// Characters with a meaning in YPath (attributes, ranges, column selectors, escapes): a
/// table name holding one could be created but never addressed.
const YPATH_SPECIAL: &[char] = &['@', '&', '*', '[', ']', '{', '}', '<', '>', '\\'];

/// The longest path a node may have, in bytes (checked before any work: every node action
/// carries its path, and a deep `create -r` logs one per level).
pub const MAX_PATH_BYTES: usize = 4096;

/// The most names a path may have below the root (`//a/b` has 2).
pub const MAX_PATH_DEPTH: usize = 128;

/// Checks a Cypress-style table path (`//a/b`): absolute, components not empty, not `.` or
/// `..`, without control characters or YPath's special characters, at most
/// [`MAX_PATH_BYTES`] long and [`MAX_PATH_DEPTH`] deep.
pub fn validate_path(path: &str) -> Result<()> {
    if path.len() > MAX_PATH_BYTES {
        return Err(Error::Invalid(format!(
            "Invalid path {}: it is longer than the {MAX_PATH_BYTES} bytes a path may have",
            dynql_core::error::shown(path)
        )));
    }
    let depth = path
        .bytes()
        .filter(|b| *b == b'/')
        .count()
        .saturating_sub(1);
    if depth > MAX_PATH_DEPTH {
        return Err(Error::Invalid(format!(
            "Invalid path {}: it is {depth} levels deep, more than the {MAX_PATH_DEPTH} a path may have",
            dynql_core::error::shown(path)
        )));
    }
    let invalid = |why: String| {
        Err(Error::Invalid(format!(
            "Invalid path {}: {why}; expected an absolute path such as //home/user/table",
            dynql_core::error::shown(path)
        )))
    };
    if !path.starts_with("//") || path.len() < 3 || path.ends_with('/') {
        return invalid("it must start with // and not end with /".into());
    }
    for component in path[2..].split('/') {
        if component.is_empty() {
            return invalid("it has an empty component".into());
        }
        if component == "." || component == ".." {
            return invalid(format!(
                "{component:?} is not a name (paths are not relative)"
            ));
        }
        if let Some(c) = component
            .chars()
            .find(|c| c.is_control() || YPATH_SPECIAL.contains(c))
        {
            return invalid(format!(
                "{c:?} cannot be part of a name (YPath gives it a meaning)"
            ));
        }
    }
    Ok(())
}
