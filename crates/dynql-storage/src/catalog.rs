//! The operations that change the catalog (create, remove, copy, `set`); its types and the
//! rules of their attributes are [`crate::kernel::catalog`]'s.

use std::collections::BTreeMap;

use dynql_core::TableSchema;

use crate::error::{Error, Result};
use crate::kernel::catalog::*;
use crate::kernel::pivots::validate_tablets;
use crate::log::Action;
use crate::store::Store;

impl Store {
    /// Sets a writable attribute (see [`WRITABLE_ATTRIBUTES`]); takes effect for the
    /// following reads, writes and compactions (no remount needed).
    ///
    /// # Errors
    /// No such table, an attribute that cannot be set, or a value of the wrong kind.
    ///
    /// Setting `forced_compaction_revision` compacts the table fully at once (YT does at the
    /// next remount).
    pub async fn set_attribute(&self, path: &str, name: &str, value: AttributeValue) -> Result<()> {
        self.commit(|state| {
            // A damaged table takes no change but its removal (replay would not apply one).
            let (entry, _) = state.table_data(path)?;
            set_attribute(&mut entry.clone(), name, &value)?;
            Ok(vec![Action::SetAttribute {
                path: path.into(),
                table_id: entry.id.clone(),
                name: name.into(),
                value: value.clone(),
            }])
        })
        .await?;
        if name == "forced_compaction_revision" {
            self.compact(path).await?;
        }
        Ok(())
    }

    /// The catalog entry of a table.
    pub async fn table(&self, path: &str) -> Result<TableEntry> {
        let state = self.refresh().await?;
        state
            .tables
            .get(path)
            .map(|(e, _)| e.clone())
            .ok_or_else(|| Error::NoSuchTable { path: path.into() })
    }

    /// All table entries by path.
    pub async fn tables(&self) -> Result<BTreeMap<String, TableEntry>> {
        let state = self.refresh().await?;
        Ok(state
            .tables
            .iter()
            .map(|(p, (e, _))| (p.clone(), e.clone()))
            .collect())
    }

    /// Creates a table.
    ///
    /// # Errors
    /// A bad path, an existing node, or invalid `tablet_count`/`pivot_keys`.
    pub async fn create_table(
        &self,
        path: &str,
        schema: TableSchema,
        options: TableOptions,
    ) -> Result<()> {
        validate_path(path)?;
        let (tablet_count, pivot_keys) = validate_tablets(&schema, &options)?;
        let trimmed_row_counts = match &options.trimmed_row_counts {
            None => vec![],
            Some(_) if schema.is_sorted() => {
                return Err(Error::Invalid(
                    "\"trimmed_row_counts\" can only be set for ordered tables".into(),
                ))
            }
            Some(counts) if options.tablet_count != Some(counts.len()) => {
                return Err(Error::Invalid(format!(
                    "\"trimmed_row_counts\" has {} values: \"tablet_count\" must be given and equal to it",
                    counts.len()
                )))
            }
            Some(counts) => counts.clone(),
        };
        if !options.auto_partitioning.is_default() && !schema.is_sorted() {
            return Err(Error::Invalid(
                "auto_partitioning_* attributes are for sorted tables: an ordered table's tablets are resharded by hand".into(),
            ));
        }
        let retention = options.retention;
        if retention.min_data_versions > retention.max_data_versions
            || retention.min_data_ttl > retention.max_data_ttl
        {
            return Err(Error::Invalid(
                "min_data_versions must not exceed max_data_versions, nor min_data_ttl max_data_ttl".into(),
            ));
        }
        let ttl = options
            .ttl
            .as_deref()
            .map(|t| table_ttl(&schema, t))
            .transpose()?;
        let entry = TableEntry {
            id: self.fresh.id(),
            schema,
            tablet_count,
            pivot_keys,
            retention,
            trimmed_row_counts,
            // A static table has no tablets to serve it: unmounted, as alter-table wants.
            tablet_state: match options.static_table {
                true => crate::tablets::TabletState::Unmounted,
                false => crate::tablets::TabletState::Mounted,
            },
            commit_ordering: match options.commit_ordering.as_deref() {
                None | Some("weak") => "weak".into(),
                Some("strong") => "strong".into(),
                Some(other) => {
                    return Err(Error::Invalid(format!(
                        "Invalid \"commit_ordering\" {other:?}: expected weak or strong"
                    )))
                }
            },
            max_ordered_tablet_data_weight: options.max_ordered_tablet_data_weight,
            dynamic: !options.static_table,
            enable_compaction_and_partitioning: options
                .enable_compaction_and_partitioning
                .unwrap_or(true),
            auto_partitioning: options.auto_partitioning,
            auto_compaction_period: match options.auto_compaction_period {
                Some(0) => {
                    return Err(Error::Invalid(
                        "\"auto_compaction_period\" must be a positive number of milliseconds"
                            .into(),
                    ))
                }
                period => period,
            },
            forced_compaction_revision: None,
            lookup_cache_rows_ratio: lookup_cache_rows_ratio(
                options.lookup_cache_rows_ratio.unwrap_or(0.0),
            )?,
            enable_lookup_cache_by_default: options.enable_lookup_cache_by_default.unwrap_or(false),
            lookup_cache_rows_per_tablet: options.lookup_cache_rows_per_tablet.unwrap_or(0),
            chunk_writer: options.chunk_writer.clone().unwrap_or_default(),
            enable_key_filter_for_lookup: options.enable_key_filter_for_lookup.unwrap_or(false),
            in_memory_mode: options.in_memory_mode.unwrap_or_default(),
            compression_codec: options.compression_codec.unwrap_or_default(),
            ttl,
            custom_attributes: options.custom_attributes.clone(),
            static_chunks: vec![],
            staged_rows: None,
        };
        self.change_tree(options.transaction.as_deref(), |tree| {
            let Some(mut actions) = crate::cypress::plan::new_path(
                tree,
                path,
                "table",
                options.recursive,
                options.ignore_existing,
                &self.fresh,
            )?
            else {
                return Ok(vec![]);
            };
            actions.push(Action::CreateTable {
                path: path.into(),
                entry: entry.clone(),
            });
            Ok(actions)
        })
        .await?;
        Ok(())
    }

    /// Removes a table.
    ///
    /// # Errors
    /// No table at `path`; a lock a master transaction holds on it.
    pub async fn remove_table(&self, path: &str) -> Result<()> {
        self.change_tree(None, |tree| match tree.node(path) {
            Some(crate::cypress::NodeView::Table(_)) => {
                crate::cypress::plan::remove(tree, path, false, false)
            }
            _ => Err(Error::NoSuchTable { path: path.into() }),
        })
        .await
    }

    /// Copies (`keep_source`) or moves a table (or any node, with everything below it) to
    /// `destination`, whose parent must exist. A copied table is a new table with the
    /// source's rows and history as of the commit; it shares the source's chunks, which are
    /// immutable.
    ///
    /// # Errors
    /// No source, an existing destination, or a destination whose parent is missing or not
    /// a directory.
    pub async fn copy_table(
        &self,
        source: &str,
        destination: &str,
        keep_source: bool,
    ) -> Result<()> {
        self.copy_node(source, destination, keep_source, false, false, None)
            .await
    }
}
