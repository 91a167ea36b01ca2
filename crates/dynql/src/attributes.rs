//! Table attributes as `yt get PATH/@NAME` shows them, and resharding.

use dynql_core::{Value, Yson};
use dynql_storage::static_table::TableRead;
use dynql_storage::{Reshard, Timestamp};

use crate::database::Database;
use crate::error::{Error, Result};

/// The rows of a static table: how many, in how many chunks, and their data weight.
struct StaticSize {
    rows: u64,
    chunks: u64,
    data_weight: u64,
}

/// Attributes [`Database::get_attribute`] knows, in the order `get PATH/@` lists them.
pub const ATTRIBUTES: &[&str] = &[
    "id",
    "type",
    "dynamic",
    "sorted",
    "commit_ordering",
    "schema",
    "key_columns",
    "tablet_state",
    "tablet_count",
    "pivot_keys",
    "tablets",
    "chunk_count",
    "row_count",
    "data_weight",
    "min_data_versions",
    "max_data_versions",
    "min_data_ttl",
    "max_data_ttl",
    "auto_partitioning_by_size",
    "auto_partitioning_partition_size_mb",
    "auto_partitioning_min_partitions_count",
    "auto_partitioning_max_partitions_count",
    "auto_compaction_period",
    "forced_compaction_revision",
    "mount_config",
    "chunk_writer",
    "key_bloom_filter",
    "in_memory_mode",
    "compression_codec",
    "ttl",
];

/// A custom attribute of a table (`name` may reach inside its value: `a/b`).
pub(crate) fn custom_attribute(entry: &dynql_storage::TableEntry, name: &str) -> Option<Yson> {
    let mut parts = name.split('/');
    let text = entry.custom_attributes.get(parts.next()?)?;
    let keys: Vec<&str> = parts.collect();
    let value = dynql_storage::cypress::parse_value(text);
    dynql_storage::cypress::plan::inside(&value, &keys).cloned()
}

fn unwrap(v: &Yson) -> &Yson {
    match v {
        Yson::Attributed { value, .. } => value,
        other => other,
    }
}

fn text(s: &str) -> Yson {
    Yson::String(s.as_bytes().to_vec())
}

/// The `mount_config` settings dynql honours, as a map (`get PATH/@mount_config`).
fn mount_config(entry: &dynql_storage::TableEntry) -> Yson {
    let mut map = vec![(
        b"enable_compaction_and_partitioning".to_vec(),
        Yson::Boolean(entry.enable_compaction_and_partitioning),
    )];
    if let Some(w) = entry.max_ordered_tablet_data_weight {
        map.push((b"max_ordered_tablet_data_weight".to_vec(), Yson::Uint64(w)));
    }
    if let Some(p) = entry.auto_compaction_period {
        map.push((b"auto_compaction_period".to_vec(), Yson::Uint64(p)));
    }
    if entry.lookup_cache_rows_per_tablet > 0 {
        map.push((
            b"lookup_cache_rows_per_tablet".to_vec(),
            Yson::Uint64(entry.lookup_cache_rows_per_tablet),
        ));
    }
    if entry.schema.is_sorted() {
        map.push((
            b"lookup_cache_rows_ratio".to_vec(),
            Yson::Double(entry.lookup_cache_rows_ratio),
        ));
        map.push((
            b"enable_lookup_cache_by_default".to_vec(),
            Yson::Boolean(entry.enable_lookup_cache_by_default),
        ));
        map.push((
            b"enable_key_filter_for_lookup".to_vec(),
            Yson::Boolean(entry.enable_key_filter_for_lookup),
        ));
    }
    Yson::Map(map)
}

fn mount_config_keys(entry: &dynql_storage::TableEntry) -> Vec<String> {
    match mount_config(entry) {
        Yson::Map(m) => m
            .iter()
            .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
            .collect(),
        _ => Vec::new(),
    }
}

/// How a table's system attribute that `set` cannot change is changed, as YT users do it;
/// `None` for the attributes `set` takes.
fn changed_by_command(name: &str) -> Option<&'static str> {
    Some(match name {
        "schema" | "key_columns" | "sorted" => {
            "the schema is changed with `alter-table PATH --schema SCHEMA`"
        }
        "dynamic" => "a table is made dynamic or static with `alter-table PATH --dynamic BOOL`",
        "tablet_count" | "pivot_keys" | "tablets" => {
            "tablets are changed with `reshard-table PATH --tablet-count N` (or pivot keys)"
        }
        "tablet_state" => "use `mount-table`, `unmount-table`, `freeze-table` or `unfreeze-table`",
        "type" | "row_count" | "chunk_count" | "data_weight" | "id" => {
            "it is read-only (the system keeps it)"
        }
        _ => return None,
    })
}

/// A scalar attribute value as the store takes it.
pub(crate) fn attribute_value(name: &str, value: &Yson) -> Result<dynql_storage::AttributeValue> {
    Ok(match unwrap(value) {
        // `chunk_writer` and its parts are maps and lists: the store takes their text.
        v @ (Yson::Map(_) | Yson::List(_)) if name.starts_with("chunk_writer") => {
            dynql_storage::AttributeValue::Text(dynql_core::yson::to_text(v))
        }
        Yson::Int64(n) if *n >= 0 => dynql_storage::AttributeValue::Number(*n as u64),
        Yson::Uint64(n) => dynql_storage::AttributeValue::Number(*n),
        Yson::Boolean(b) => dynql_storage::AttributeValue::Boolean(*b),
        Yson::Double(f) => dynql_storage::AttributeValue::Double(*f),
        Yson::String(s) => {
            dynql_storage::AttributeValue::Text(String::from_utf8_lossy(s).into_owned())
        }
        other => {
            return Err(Error::Invalid(format!(
            "Attribute {name:?}: expected a non-negative integer, a boolean or a string, got {}",
            dynql_core::yson::to_text(other)
        )))
        }
    })
}

impl Database {
    /// The value of attribute `name` of the table at `path` (`yt get PATH/@NAME`); `None` for
    /// the map of all attributes (`yt get PATH/@`).
    ///
    /// # Errors
    /// No such table; an unknown attribute (the error lists the known ones); `pivot_keys` of
    /// an ordered table.
    pub async fn get_attribute(&self, path: &str, name: Option<&str>) -> Result<Yson> {
        self.get_attribute_in(path, name, None).await
    }

    /// [`Database::get_attribute`] as master transaction `tx` sees the tree: custom
    /// attributes are the transaction's versions; a table's other attributes are the
    /// committed ones.
    pub async fn get_attribute_in(
        &self,
        path: &str,
        name: Option<&str>,
        tx: Option<&str>,
    ) -> Result<Yson> {
        if let Some(id) = tx {
            self.master_transaction_id(id).await?;
        }
        let entry = match self.store().node_in(path, tx).await? {
            // A transaction's version of a committed table differs in custom attributes
            // only: the rest is the committed entry.
            Some(dynql_storage::cypress::NodeInfo::Table(staged)) => {
                match self.store().table(path).await {
                    Ok(mut committed) if tx.is_some() && committed.id == staged.id => {
                        committed.custom_attributes = staged.custom_attributes;
                        committed
                    }
                    _ => staged,
                }
            }
            Some(node) => {
                let children = match node.type_name() {
                    "map_node" => self.list_in(path, tx).await?.len(),
                    _ => 0,
                };
                return Database::node_attribute(path, &node, name, children);
            }
            None => {
                return Err(dynql_storage::Error::NoSuchNode { path: path.into() }.into());
            }
        };
        // A static table's size is that of its rows as the transaction sees them.
        let size = match self.store().table_for_read(path, tx).await? {
            TableRead::Static { chunks, .. } => Some(StaticSize {
                rows: chunks.iter().map(|c| c.rows).sum(),
                chunks: chunks.len() as u64,
                data_weight: chunks.iter().map(|c| c.data_weight).sum(),
            }),
            TableRead::Versioned { .. } => None,
        };
        self.table_attribute(path, &entry, name, size.as_ref())
            .await
    }

    /// An attribute of the table `entry` at `path` (`size`: a static table's rows).
    async fn table_attribute(
        &self,
        path: &str,
        entry: &dynql_storage::TableEntry,
        name: Option<&str>,
        size: Option<&StaticSize>,
    ) -> Result<Yson> {
        let Some(name) = name else {
            let mut all = Vec::new();
            for &a in ATTRIBUTES {
                if a == "pivot_keys" && !entry.schema.is_sorted() {
                    continue;
                }
                all.push((
                    a.as_bytes().to_vec(),
                    Box::pin(self.table_attribute(path, entry, Some(a), size)).await?,
                ));
            }
            for (k, v) in &entry.custom_attributes {
                all.push((
                    k.as_bytes().to_vec(),
                    dynql_storage::cypress::parse_value(v),
                ));
            }
            return Ok(Yson::Map(all));
        };
        // A mount-config setting given at the top level is read from mount_config (a custom
        // attribute of the same name, stored by an older dynql, does not hide it).
        let canonical = dynql_storage::canonical_attribute(name);
        let name = canonical.as_ref();
        if let Some(value) = custom_attribute(entry, name) {
            return Ok(value);
        }
        let uint = |v: u64| Yson::Uint64(v);
        Ok(match name {
            "id" => text(&entry.id),
            "type" => text("table"),
            "dynamic" => Yson::Boolean(entry.dynamic),
            "commit_ordering" => text(&entry.commit_ordering),
            "sorted" => Yson::Boolean(entry.schema.is_sorted()),
            "schema" => entry.schema.to_yson(),
            "key_columns" => Yson::List(
                entry
                    .schema
                    .key_columns()
                    .iter()
                    .map(|c| text(&c.name))
                    .collect(),
            ),
            "tablet_state" => text(entry.tablet_state.name()),
            "tablet_count" => Yson::Int64(entry.tablet_count as i64),
            "pivot_keys" => {
                if !entry.schema.is_sorted() {
                    return Err(Error::NoSuchAttribute(format!(
                        "Attribute \"pivot_keys\" is not found: {path} is an ordered table"
                    )));
                }
                Yson::List(entry.pivot_keys.iter().map(pivot_yson).collect())
            }
            "tablets" => {
                let mut tablets = Vec::new();
                if entry.schema.is_sorted() {
                    let chunks = self.store().chunks(path).await?;
                    let sizes = dynql_storage::kernel::partitioning::tablet_bytes(
                        &entry.pivot_keys,
                        &chunks,
                    );
                    for (i, p) in entry.pivot_keys.iter().enumerate() {
                        tablets.push(Yson::Map(vec![
                            (b"index".to_vec(), Yson::Int64(i as i64)),
                            (b"state".to_vec(), text(entry.tablet_state.name())),
                            (b"pivot_key".to_vec(), pivot_yson(p)),
                            // What auto-partitioning weighs: the bytes of the chunk row groups
                            // that start in the tablet.
                            (
                                b"compressed_data_size".to_vec(),
                                Yson::Int64(sizes.get(i).copied().unwrap_or(0) as i64),
                            ),
                        ]));
                    }
                } else {
                    for t in self.store().queue_tablets(path).await? {
                        tablets.push(Yson::Map(vec![
                            (b"index".to_vec(), Yson::Int64(t.index as i64)),
                            (b"state".to_vec(), text(entry.tablet_state.name())),
                            (
                                b"trimmed_row_count".to_vec(),
                                Yson::Int64(t.trimmed_row_count as i64),
                            ),
                            (b"row_count".to_vec(), Yson::Int64(t.row_count as i64)),
                        ]));
                    }
                }
                Yson::List(tablets)
            }
            "chunk_count" | "row_count" | "data_weight" if size.is_some() => {
                let size = size.expect("matched");
                Yson::Int64(match name {
                    "chunk_count" => size.chunks,
                    "row_count" => size.rows,
                    _ => size.data_weight,
                } as i64)
            }
            "chunk_count" => Yson::Int64(self.store().chunks(path).await?.len() as i64),
            "row_count" | "data_weight" => {
                // Counted as the scan goes: the rows are not held.
                let stats = self
                    .store()
                    .count_rows(path, Timestamp::SYNC_LAST_COMMITTED, name == "data_weight")
                    .await?;
                if name == "row_count" {
                    Yson::Int64(stats.rows_read as i64)
                } else {
                    Yson::Int64(stats.data_weight as i64)
                }
            }
            "min_data_versions" => uint(entry.retention.min_data_versions),
            "max_data_versions" => uint(entry.retention.max_data_versions),
            "min_data_ttl" => uint(entry.retention.min_data_ttl),
            "max_data_ttl" => uint(entry.retention.max_data_ttl),
            "auto_partitioning_by_size" => Yson::Boolean(entry.auto_partitioning.by_size),
            "auto_partitioning_partition_size_mb" => {
                uint(entry.auto_partitioning.partition_size_mb)
            }
            "auto_partitioning_min_partitions_count" => {
                uint(entry.auto_partitioning.min_partitions_count)
            }
            "auto_partitioning_max_partitions_count" => {
                uint(entry.auto_partitioning.max_partitions_count)
            }
            "auto_compaction_period" => entry.auto_compaction_period.map_or(Yson::Entity, uint),
            "forced_compaction_revision" => {
                entry.forced_compaction_revision.map_or(Yson::Entity, uint)
            }
            "mount_config" => mount_config(entry),
            other if other.starts_with("mount_config/") => {
                let key = &other["mount_config/".len()..];
                match mount_config(entry).get(key) {
                    Some(value) => value.clone(),
                    None => {
                        return Err(Error::NoSuchAttribute(format!(
                            "Attribute {other:?} is not found: mount_config holds {}",
                            mount_config_keys(entry).join(", ")
                        )))
                    }
                }
            }
            "chunk_writer" => entry.chunk_writer.to_yson(),
            "key_bloom_filter" => text(
                if entry.chunk_writer.key_filter.enable && entry.enable_key_filter_for_lookup {
                    "ENABLED"
                } else {
                    "DISABLED"
                },
            ),
            "in_memory_mode" => text(entry.in_memory_mode.name()),
            "compression_codec" => text(&entry.compression_codec.name()),
            "ttl" => entry
                .ttl
                .as_ref()
                .map_or(Yson::Entity, |t| text(&t.to_string())),
            other if other.starts_with("chunk_writer/") => {
                let mut node = entry.chunk_writer.to_yson();
                for part in other.split('/').skip(1) {
                    node = match node.get(part) {
                        Some(v) => v.clone(),
                        None => {
                            return Err(Error::NoSuchAttribute(format!(
                                "Attribute {other:?} is not found: chunk_writer holds key_filter/{{enable, false_positive_rate, bits_per_key}} and key_filter_prefix/{{enable, false_positive_rate, bits_per_key, prefix_lengths}}"
                            )))
                        }
                    };
                }
                node
            }
            other => {
                return Err(Error::NoSuchAttribute(format!(
                    "Attribute {other:?} is not found (dynql knows: {})",
                    ATTRIBUTES.join(", ")
                )))
            }
        })
    }

    /// Sets a writable attribute (`yt set PATH/@NAME VALUE`): `min_data_versions`,
    /// `max_data_versions`, `min_data_ttl`, `max_data_ttl`, `commit_ordering`,
    /// `mount_config/max_ordered_tablet_data_weight`,
    /// `mount_config/enable_compaction_and_partitioning`. The value is a YSON or JSON scalar.
    pub async fn set_attribute(&self, path: &str, name: &str, value: &Yson) -> Result<()> {
        self.set_attribute_in(path, name, Some(value), None).await
    }

    /// Sets (`Some`) or removes (`None`) an attribute in master transaction `tx` or outside:
    /// a custom one on any node, or a table's writable one (outside transactions only).
    pub async fn set_attribute_in(
        &self,
        path: &str,
        name: &str,
        value: Option<&Yson>,
        tx: Option<&str>,
    ) -> Result<()> {
        if let Some(id) = tx {
            self.master_transaction_id(id).await?;
        }
        if !self.is_table_attribute(path, name, tx).await? {
            return Ok(self
                .store()
                .set_custom_attribute(path, name, value, tx)
                .await?);
        }
        if tx.is_some() {
            return Err(Error::Invalid(format!(
                "Attribute {name:?} of table {path} is set outside master transactions in dynql (custom attributes can be set inside)"
            )));
        }
        if let Some(how) = changed_by_command(name) {
            return Err(Error::Invalid(format!(
                "Attribute {name:?} of table {path} cannot be set: {how}"
            )));
        }
        let Some(value) = value else {
            let value = dynql_storage::AttributeValue::Removed;
            return Ok(self.store().set_attribute(path, name, value).await?);
        };
        let value = attribute_value(name, value)?;
        Ok(self.store().set_attribute(path, name, value).await?)
    }

    /// Removes an attribute, back to its default (`yt remove PATH/@NAME`): `ttl` only.
    ///
    /// # Example
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use dynql::{Database, Yson};
    /// let db = Database::open("memory://").unwrap();
    /// db.create_table_from_text("//t", r#"{dynamic=%true; ttl="Interval(\"P1D\") ON at";
    ///     schema=[{name=k; type=int64; sort_order=ascending}; {name=at; type=datetime}]}"#)
    ///     .await.unwrap();
    /// db.remove_attribute("//t", "ttl").await.unwrap();
    /// assert_eq!(db.get_attribute("//t", Some("ttl")).await.unwrap(), Yson::Entity);
    /// # });
    /// ```
    pub async fn remove_attribute(&self, path: &str, name: &str) -> Result<()> {
        self.set_attribute_in(path, name, None, None).await
    }

    /// Whether `name` is an attribute of the table at `path` that dynql gives a meaning to
    /// (not a custom one); false when `path` is not a table.
    async fn is_table_attribute(&self, path: &str, name: &str, tx: Option<&str>) -> Result<bool> {
        if !matches!(
            self.store().node_in(path, tx).await?,
            Some(dynql_storage::cypress::NodeInfo::Table(_))
        ) {
            return Ok(false);
        }
        let first = name.split('/').next().unwrap_or_default();
        Ok(dynql_storage::WRITABLE_ATTRIBUTES.contains(&name)
            || ATTRIBUTES.contains(&first)
            || dynql_storage::kernel::partitioning::ATTRIBUTES.contains(&name)
            || dynql_storage::cypress::SYSTEM_ATTRIBUTES.contains(&first))
    }

    /// Reshards an unmounted sorted table: explicit pivot keys, or a tablet count (`uniform`
    /// splits the first key column's integer range evenly). Query results never change.
    /// Returns the new tablet count.
    ///
    /// # Example
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use dynql::{Database, Reshard, TabletCommand, Value};
    /// let db = Database::open("memory://").unwrap();
    /// db.create_table_from_text("//t", "{dynamic=%true; schema=[{name=k; type=int64; sort_order=ascending}]}").await.unwrap();
    /// db.set_tablet_state("//t", TabletCommand::Unmount).await.unwrap();
    /// let pivots = vec![vec![], vec![Value::Int64(100)]];
    /// assert_eq!(db.reshard_table("//t", Reshard::Pivots(pivots)).await.unwrap(), 2);
    /// db.set_tablet_state("//t", TabletCommand::Mount).await.unwrap();
    /// # });
    /// ```
    pub async fn reshard_table(&self, path: &str, reshard: Reshard) -> Result<usize> {
        let reshard = match reshard {
            Reshard::Pivots(mut pivots) => {
                let entry = self.store().table(path).await?;
                adapt_pivots(&entry.schema, &mut pivots);
                Reshard::Pivots(pivots)
            }
            other => other,
        };
        Ok(self.store().reshard_table(path, reshard).await?)
    }
}

/// A pivot key as YT prints it: a list of the key's values.
fn pivot_yson(pivot: &dynql_storage::PivotKey) -> Yson {
    Yson::List(pivot.0.iter().map(Value::to_yson).collect())
}

/// JSON has no uint64 literal: non-negative integers given for uint64 key columns adapt.
pub(crate) fn adapt_pivots(schema: &dynql_core::TableSchema, pivots: &mut [Vec<Value>]) {
    for p in pivots.iter_mut() {
        for (v, c) in p.iter_mut().zip(schema.key_columns()) {
            if let (Value::Int64(x), dynql_core::ValueType::Uint64) = (&*v, c.wire_type()) {
                if *x >= 0 {
                    *v = Value::Uint64(*x as u64);
                }
            }
        }
    }
}
