//! The attributes of `create table` (`yt create table --attributes`): the schema, `dynamic`,
//! tablets, retention, `mount_config`, as a schema and [`TableOptions`] for the store.

use dynql_core::{TableSchema, Value, Yson};
use dynql_ql::ComputedColumns;
use dynql_storage::TableOptions;

use crate::error::{Error, Result};

/// Attributes accepted by `create table` that do not change dynql's behaviour (storage
/// layout hints of a YT cluster).
const IGNORED_ATTRIBUTES: &[&str] = &[
    "optimize_for",
    "erasure_codec",
    "replication_factor",
    "primary_medium",
    "account",
    "enable_dynamic_store_read",
    "tablet_cell_bundle",
    "atomicity",
];

/// The schema and options a `create table` attribute map asks for.
///
/// # Errors
/// A missing or invalid schema, `dynamic` not true, bad tablet attributes, an invalid
/// computed column, an attribute dynql does not know.
pub(crate) fn table_definition(attributes: &Yson) -> Result<(TableSchema, TableOptions)> {
    let Yson::Map(entries) = unwrap_attributes(attributes) else {
        return Err(Error::Invalid("Attributes must be a map".into()));
    };
    let mut schema = None;
    let mut dynamic = false;
    let mut options = TableOptions::default();
    let mut chunk_writer = None;
    let mut key_bloom_filter = None;
    let mut given = Vec::new();
    for (k, v) in entries {
        let key = String::from_utf8_lossy(k);
        given.push(key.to_string());
        match key.as_ref() {
            "schema" => schema = Some(TableSchema::from_yson(v)?),
            "dynamic" => {
                dynamic = match unwrap_attributes(v) {
                    Yson::Boolean(b) => *b,
                    Yson::String(s) if s == b"true" || s == b"false" => s == b"true",
                    _ => {
                        return Err(Error::Invalid(
                            "Attribute \"dynamic\" must be a boolean".into(),
                        ))
                    }
                }
            }
            "tablet_count" => {
                options.tablet_count = Some(match unwrap_attributes(v) {
                    Yson::Int64(n) if *n > 0 => *n as usize,
                    Yson::Uint64(n) if *n > 0 => *n as usize,
                    _ => {
                        return Err(Error::Invalid(
                            "Attribute \"tablet_count\" must be a positive integer".into(),
                        ))
                    }
                })
            }
            "pivot_keys" => options.pivot_keys = Some(parse_pivot_keys(v)?),
            "commit_ordering" => {
                // Checked by the store: weak or strong.
                options.commit_ordering = Some(
                    unwrap_attributes(v)
                        .as_str()
                        .ok_or_else(|| {
                            Error::Invalid(
                                "Attribute \"commit_ordering\" must be weak or strong".into(),
                            )
                        })?
                        .to_string(),
                )
            }
            // Checked against the key once the schema is known.
            "chunk_writer" => chunk_writer = Some(v),
            "key_bloom_filter" => {
                key_bloom_filter = Some(dynql_storage::kernel::catalog::key_bloom_filter(
                    &crate::attributes::attribute_value("key_bloom_filter", v)?,
                )?)
            }
            "in_memory_mode" => {
                let mode = unwrap_attributes(v).as_str().ok_or_else(|| {
                    Error::Invalid(
                        "Attribute \"in_memory_mode\" must be none, compressed or uncompressed"
                            .into(),
                    )
                })?;
                options.in_memory_mode = Some(dynql_storage::in_memory::InMemoryMode::parse(mode)?);
            }
            "compression_codec" => {
                let name = unwrap_attributes(v).as_str().ok_or_else(|| {
                    Error::Invalid(format!(
                        "Attribute \"compression_codec\" must be a codec name: {}",
                        dynql_storage::codec::YT_CODEC_NAMES
                    ))
                })?;
                options.compression_codec =
                    Some(dynql_storage::codec::CompressionCodec::parse(name)?);
            }
            "mount_config" => {
                let Yson::Map(config) = unwrap_attributes(v) else {
                    return Err(Error::Invalid(
                        "Attribute \"mount_config\" must be a map".into(),
                    ));
                };
                for (k, value) in config {
                    mount_config_setting(&mut options, &String::from_utf8_lossy(k), value)?;
                }
            }
            // YT lets every mount-config setting be given at the table's top level too.
            name if dynql_storage::MOUNT_CONFIG_KEYS.contains(&name) => {
                mount_config_setting(&mut options, name, v)?
            }
            "trimmed_row_counts" => {
                let Yson::List(items) = unwrap_attributes(v) else {
                    return Err(Error::Invalid(
                        "Attribute \"trimmed_row_counts\" must be a list of non-negative integers"
                            .into(),
                    ));
                };
                options.trimmed_row_counts = Some(
                    items
                        .iter()
                        .map(|i| non_negative("trimmed_row_counts", i))
                        .collect::<Result<_>>()?,
                );
            }
            "min_data_versions" => options.retention.min_data_versions = non_negative(&key, v)?,
            "max_data_versions" => options.retention.max_data_versions = non_negative(&key, v)?,
            "min_data_ttl" => options.retention.min_data_ttl = non_negative(&key, v)?,
            "max_data_ttl" => options.retention.max_data_ttl = non_negative(&key, v)?,
            "auto_compaction_period" => {
                options.auto_compaction_period = Some(non_negative(&key, v)?)
            }
            "ttl" => match unwrap_attributes(v) {
                Yson::String(t) => options.ttl = Some(String::from_utf8_lossy(t).into_owned()),
                _ => {
                    return Err(Error::Invalid(
                        "Attribute \"ttl\" must be a string: Interval(\"P1D\") ON <column>".into(),
                    ))
                }
            },
            name if dynql_storage::kernel::partitioning::ATTRIBUTES.contains(&name) => {
                let value = crate::attributes::attribute_value(name, v)?;
                options.auto_partitioning.set(name, &value)?;
            }
            other if IGNORED_ATTRIBUTES.contains(&other) => {}
            // System attributes that are read, not given.
            other
                if crate::ATTRIBUTES.contains(&other)
                    || dynql_storage::cypress::SYSTEM_ATTRIBUTES.contains(&other) =>
            {
                return Err(Error::Invalid(format!(
                    "Builtin attribute {other:?} cannot be set when a table is created"
                )))
            }
            // Anything else is a custom attribute, kept on the table as YT keeps it.
            other => {
                options
                    .custom_attributes
                    .insert(other.to_string(), dynql_core::yson::to_text(v));
            }
        }
    }
    if !dynamic {
        if let Some(key) = given.iter().find(|k| is_dynamic_only(k)) {
            return Err(Error::Invalid(format!(
                "Attribute {key:?} is for dynamic tables: pass dynamic=%true, or leave it out for a static table"
            )));
        }
        options.static_table = true;
    }
    let schema = schema.ok_or_else(|| {
        Error::Invalid(
            "Attribute \"schema\" is required (dynql's tables, static ones too, have a strict schema)"
                .into(),
        )
    })?;
    if let Some(pivots) = &mut options.pivot_keys {
        crate::attributes::adapt_pivots(&schema, pivots);
    }
    if let Some(v) = chunk_writer {
        options.chunk_writer = Some(dynql_storage::key_filter::ChunkWriterSettings::from_yson(
            v,
            schema.key_column_count(),
        )?);
    }
    if let Some(enable) = key_bloom_filter {
        // YDB's switch for both halves of YT's key filters: writing and consulting them.
        let settings = options.chunk_writer.take().unwrap_or_default();
        options.chunk_writer = Some(settings.with(
            "key_filter/enable",
            Yson::Boolean(enable),
            schema.key_column_count(),
        )?);
        options.enable_key_filter_for_lookup = Some(enable);
    }
    ComputedColumns::compile(&schema)?;
    Ok((schema, options))
}

/// Whether a `create table` attribute is about tablets, versions or other things only a
/// dynamic table has.
fn is_dynamic_only(key: &str) -> bool {
    const DYNAMIC_ONLY: &[&str] = &[
        "tablet_count",
        "pivot_keys",
        "commit_ordering",
        "chunk_writer",
        "key_bloom_filter",
        "in_memory_mode",
        "mount_config",
        "trimmed_row_counts",
        "min_data_versions",
        "max_data_versions",
        "min_data_ttl",
        "max_data_ttl",
        "auto_compaction_period",
        "ttl",
    ];
    DYNAMIC_ONLY.contains(&key)
        || dynql_storage::kernel::partitioning::ATTRIBUTES.contains(&key)
        || dynql_storage::MOUNT_CONFIG_KEYS.contains(&key)
}

/// Applies one `mount_config` setting (given inside `mount_config` or at the top level).
/// Every key either has its effect or is an error, never silently ignored.
fn mount_config_setting(options: &mut TableOptions, key: &str, v: &Yson) -> Result<()> {
    let boolean = |name: &str| match unwrap_attributes(v) {
        Yson::Boolean(b) => Ok(*b),
        _ => Err(Error::Invalid(format!(
            "mount_config/{name} must be %true or %false"
        ))),
    };
    match key {
        "max_ordered_tablet_data_weight" => {
            options.max_ordered_tablet_data_weight = Some(non_negative(key, v)?)
        }
        "lookup_cache_rows_ratio" => {
            options.lookup_cache_rows_ratio = Some(match unwrap_attributes(v) {
                Yson::Double(f) => *f,
                Yson::Int64(n) => *n as f64,
                Yson::Uint64(n) => *n as f64,
                _ => {
                    return Err(Error::Invalid(
                        "mount_config/lookup_cache_rows_ratio must be a number from 0 to 1".into(),
                    ))
                }
            })
        }
        "lookup_cache_rows_per_tablet" => {
            options.lookup_cache_rows_per_tablet = Some(non_negative(key, v)?)
        }
        "enable_lookup_cache_by_default" => {
            options.enable_lookup_cache_by_default = Some(boolean(key)?)
        }
        "enable_key_filter_for_lookup" => {
            options.enable_key_filter_for_lookup = Some(boolean(key)?)
        }
        "auto_compaction_period" => options.auto_compaction_period = Some(non_negative(key, v)?),
        "enable_compaction_and_partitioning" => {
            options.enable_compaction_and_partitioning = Some(boolean(key)?)
        }
        other => {
            return Err(Error::Unsupported(format!(
                "mount_config/{other} is not supported by dynql (supported: {})",
                dynql_storage::MOUNT_CONFIG_KEYS.join(", ")
            )))
        }
    }
    Ok(())
}

pub(crate) fn unwrap_attributes(v: &Yson) -> &Yson {
    match v {
        Yson::Attributed { value, .. } => value,
        other => other,
    }
}

/// Parses a YSON or JSON document (JSON first when it is valid JSON).
pub fn parse_document(text: &str) -> Result<Yson> {
    if let Ok(json) = serde_json::from_str::<serde_json::Value>(text) {
        return Ok(Yson::from_json(&json));
    }
    Ok(dynql_core::yson::parse(text.as_bytes()).map_err(dynql_core::Error::from)?)
}

/// A value given as text (`set`'s argument): YSON or JSON as [`parse_document`], else the
/// text itself as a string (a bare word such as `strong`, an expression such as
/// `Interval("P1D") ON at`).
///
/// # Errors
/// Text nested deeper than YSON's limit of [`dynql_core::yson::MAX_DEPTH`] levels (or JSON
/// deeper than the JSON parser's 128 that is not YSON either): taking it for a string would
/// store something other than what was meant.
pub fn parse_value_or_string(text: &str) -> Result<Yson> {
    let json_too_deep = match serde_json::from_str::<serde_json::Value>(text) {
        Ok(json) => return Ok(Yson::from_json(&json)),
        // serde_json names this error only in its message.
        Err(e) => e.to_string().starts_with("recursion limit exceeded"),
    };
    let max = dynql_core::yson::MAX_DEPTH;
    match dynql_core::yson::parse(text.as_bytes()) {
        Ok(value) => Ok(value),
        Err(e) if e.too_deep => Err(Error::Invalid(format!(
            "The value is nested deeper than {max} levels, the YSON depth limit ({e})"
        ))),
        Err(e) if json_too_deep => Err(Error::Invalid(format!(
            "The value is JSON nested deeper than 128 levels, the JSON parser's limit, and not YSON either ({e}); write it as YSON, which may nest {max} levels"
        ))),
        Err(_) => Ok(Yson::String(text.as_bytes().to_vec())),
    }
}

fn non_negative(name: &str, v: &Yson) -> Result<u64> {
    match unwrap_attributes(v) {
        Yson::Int64(n) if *n >= 0 => Ok(*n as u64),
        Yson::Uint64(n) => Ok(*n),
        _ => Err(Error::Invalid(format!(
            "Attribute {name:?} must be a non-negative integer"
        ))),
    }
}

/// Parses pivot keys given as a YSON list of lists (`[[]; [10; "foo"]; [20]]`).
pub fn parse_pivot_keys(v: &Yson) -> Result<Vec<Vec<Value>>> {
    let Yson::List(items) = unwrap_attributes(v) else {
        return Err(Error::Invalid(
            "Attribute \"pivot_keys\" must be a list of lists".into(),
        ));
    };
    items
        .iter()
        .map(|p| match unwrap_attributes(p) {
            Yson::List(values) => values
                .iter()
                .map(|x| match x {
                    Yson::Entity => Ok(Value::Null),
                    Yson::Int64(i) => Ok(Value::Int64(*i)),
                    Yson::Uint64(u) => Ok(Value::Uint64(*u)),
                    Yson::Double(d) => Ok(Value::Double(*d)),
                    Yson::Boolean(b) => Ok(Value::Boolean(*b)),
                    Yson::String(s) => Ok(Value::String(s.clone())),
                    _ => Err(Error::Invalid("Pivot key values must be scalars".into())),
                })
                .collect(),
            _ => Err(Error::Invalid("Each pivot key must be a list".into())),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn define(attributes: &str) -> Result<(TableSchema, TableOptions)> {
        table_definition(&crate::parse_document(attributes)?)
    }

    const SCHEMA: &str =
        "schema=[{name=k; type=int64; sort_order=ascending}; {name=v; type=string}]";

    #[test]
    fn attributes_dynql_would_not_honour_are_refused_not_ignored() {
        // Honoured, or with no effect by their very meaning.
        for ok in [
            "in_memory_mode=none",
            "in_memory_mode=compressed",
            "in_memory_mode=uncompressed",
            "mount_config={enable_key_filter_for_lookup=%true}",
            "chunk_writer={key_filter={enable=%true; bits_per_key=12}}",
            "mount_config={enable_compaction_and_partitioning=%false}",
            "optimize_for=scan",
        ] {
            define(&format!("{{dynamic=%true; {ok}; {SCHEMA}}}")).unwrap();
        }
        for (refused, says) in [
            (
                "in_memory_mode=sometimes",
                "must be none, compressed or uncompressed",
            ),
            (
                "mount_config={enable_key_filter_for_lookup=1}",
                "enable_key_filter_for_lookup must be %true or %false",
            ),
            (
                "chunk_writer={key_filter={enable=%true; bits_per_key=0.5}}",
                "bits_per_key must be an integer from 1 to 64",
            ),
            (
                "mount_config={lookup_cache_rows_per_tablet=%true}",
                "lookup_cache_rows_per_tablet",
            ),
            ("mount_config=1", "must be a map"),
        ] {
            let e = define(&format!("{{dynamic=%true; {refused}; {SCHEMA}}}"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{refused}: {e}");
        }
    }
}
