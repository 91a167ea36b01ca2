//! Parquet and CSV files in SQL, read by DataFusion's own readers: every Arrow type typed
//! as the file has it, row groups and pages pruned by their statistics on any filtered
//! column, several files combined as DuckDB users expect.
//!
//! Files with different schemas combine by position (the same column names in the same
//! order, integer widths and other compatible types widened to one), or by name with
//! `union_by_name` (columns in order of first appearance, missing ones null). Columns that
//! dynql's exports mark as YT `string`/`utf8` (`yt:type` field metadata) read as text, as SQL
//! reads the store's tables; other binary columns stay binary. A timestamp column with a time
//! zone reads in the session's zone (UTC), as DuckDB reads `TIMESTAMPTZ`.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::datasource::file_format::csv::CsvFormat;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::type_coercion::binary::type_union_resolution;
use datafusion::physical_plan::metrics::MetricValue;
use datafusion::physical_plan::ExecutionPlan;
use futures::{StreamExt, TryStreamExt};

use crate::engine::SESSION_TIME_ZONE;
use crate::error::{Error, Result};
use crate::select::Statistics;

/// Schemas read at once while opening many files.
const SCHEMA_READS: usize = 8;

/// The format of a file source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum FileFormatKind {
    Parquet,
    /// Comma-separated values with a header line.
    Csv,
    /// Tab-separated values with a header line.
    Tsv,
}

impl FileFormatKind {
    /// The format a file name's extension names (`.parquet`, `.csv`, `.tsv`), if any.
    pub(super) fn of_name(name: &str) -> Option<FileFormatKind> {
        let lower = name.to_ascii_lowercase();
        if lower.ends_with(".parquet") {
            Some(FileFormatKind::Parquet)
        } else if lower.ends_with(".csv") {
            Some(FileFormatKind::Csv)
        } else if lower.ends_with(".tsv") {
            Some(FileFormatKind::Tsv)
        } else {
            None
        }
    }

    fn extension(self) -> &'static str {
        match self {
            FileFormatKind::Parquet => ".parquet",
            FileFormatKind::Csv => ".csv",
            FileFormatKind::Tsv => ".tsv",
        }
    }

    fn format(self, state: &dyn Session) -> Arc<dyn FileFormat> {
        let options = state.default_table_options();
        match self {
            FileFormatKind::Parquet => Arc::new(
                ParquetFormat::default()
                    .with_options(options.parquet)
                    .with_skip_metadata(false)
                    .with_enable_pruning(true),
            ),
            FileFormatKind::Csv | FileFormatKind::Tsv => Arc::new(
                CsvFormat::default()
                    .with_options(options.csv)
                    .with_has_header(true)
                    .with_delimiter(if self == FileFormatKind::Tsv {
                        b'\t'
                    } else {
                        b','
                    }),
            ),
        }
    }
}

/// Files read as one SQL table: where they are, their format, how their schemas combine.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct FileSource {
    pub(super) locations: Vec<String>,
    pub(super) format: FileFormatKind,
    pub(super) union_by_name: bool,
}

impl FileSource {
    /// One location (a path, glob, directory or URL) of one format.
    pub(super) fn new(location: &str, format: FileFormatKind) -> FileSource {
        FileSource {
            locations: vec![location.to_string()],
            format,
            union_by_name: false,
        }
    }

    fn describe(&self) -> String {
        match self.locations.as_slice() {
            [one] => format!("{one:?}"),
            many => format!("{many:?}"),
        }
    }
}

/// Opens the files of `source` as a DataFusion table of `state`'s session: lists them,
/// reads each file's schema and combines them; registers the object store they live in.
pub(super) async fn open(
    state: &dyn Session,
    source: &FileSource,
) -> Result<Arc<dyn TableProvider>> {
    let format = source.format.format(state);
    let mut urls = Vec::new();
    let mut schemas: Vec<(String, SchemaRef)> = Vec::new();
    for location in &source.locations {
        let listed = dynql_storage::files::list_files(location, source.format.extension()).await?;
        let root = ObjectStoreUrl::parse(&listed.root)?;
        state
            .runtime_env()
            .register_object_store(root.as_ref(), listed.objects.clone());
        let objects = listed.objects.clone();
        let read: Vec<(String, SchemaRef)> = futures::stream::iter(listed.files.iter().cloned())
            .map(|meta| {
                let objects = objects.clone();
                let format = format.clone();
                async move {
                    let shown = meta.location.to_string();
                    let schema = format
                        .infer_schema(state, &objects, std::slice::from_ref(&meta))
                        .await
                        .map_err(|e| {
                            Error::Storage(dynql_storage::Error::Invalid(format!(
                                "/{shown} cannot be read as {}: {e}",
                                source.format.extension().trim_start_matches('.')
                            )))
                        })?;
                    Ok::<_, Error>((shown, schema))
                }
            })
            .buffered(SCHEMA_READS)
            .try_collect()
            .await?;
        schemas.extend(read);
        for meta in &listed.files {
            urls.push(ListingTableUrl::parse(format!(
                "{}/{}",
                listed.root.trim_end_matches('/'),
                meta.location
            ))?);
        }
    }
    let schema = Arc::new(combine(source, &schemas)?);
    // Files are named one by one: no extension filter.
    let options = ListingOptions::new(format).with_file_extension("");
    let config = ListingTableConfig::new_with_multi_paths(urls)
        .with_listing_options(options)
        .with_schema(schema);
    Ok(Arc::new(ListingTable::try_new(config)?))
}

/// The table schema of files with these schemas (at least one).
fn combine(source: &FileSource, schemas: &[(String, SchemaRef)]) -> Result<Schema> {
    let invalid = |m: String| Error::Storage(dynql_storage::Error::Invalid(m));
    let (first_path, first) = &schemas[0];
    let mut fields: Vec<Field> = first.fields().iter().map(|f| f.as_ref().clone()).collect();
    for (path, schema) in &schemas[1..] {
        if !source.union_by_name {
            let names = |s: &Schema| -> Vec<String> {
                s.fields().iter().map(|f| f.name().clone()).collect()
            };
            if names(first) != names(schema) {
                return Err(invalid(format!(
                    "The files of {} have different columns: /{first_path} has ({}), /{path} has ({}); combine them by name with read_parquet(…, union_by_name => true) (missing columns read as null)",
                    source.describe(),
                    names(first).join(", "),
                    names(schema).join(", "),
                )));
            }
        }
        for f in schema.fields() {
            match fields.iter_mut().find(|g| g.name() == f.name()) {
                Some(g) => {
                    let widened = type_union_resolution(&[g.data_type().clone(), f.data_type().clone()])
                        .ok_or_else(|| {
                            invalid(format!(
                                "Column {:?} of {} has types that do not combine: {} in /{first_path}, {} in /{path}",
                                f.name(),
                                source.describe(),
                                g.data_type(),
                                f.data_type()
                            ))
                        })?;
                    *g = g.clone().with_data_type(widened);
                }
                None => fields.push(f.as_ref().clone()),
            }
        }
    }
    let fields: Vec<Field> = fields
        .into_iter()
        .map(|f| {
            let text = matches!(
                f.metadata().get("yt:type").map(String::as_str),
                Some("string" | "utf8")
            ) && matches!(
                f.data_type(),
                DataType::Binary | DataType::LargeBinary | DataType::BinaryView
            );
            let f = if text {
                f.with_data_type(DataType::Utf8View)
            } else {
                f
            };
            // An instant read in the session's zone, as DuckDB reads TIMESTAMPTZ: dates,
            // `date_trunc` and literals without an offset then mean UTC, not the zone the
            // writer named (the values, instants since the epoch, are the same).
            let f = match f.data_type() {
                DataType::Timestamp(unit, Some(zone)) if zone.as_ref() != SESSION_TIME_ZONE => {
                    let unit = *unit;
                    f.with_data_type(DataType::Timestamp(unit, Some(SESSION_TIME_ZONE.into())))
                }
                _ => f,
            };
            // A file may lack a column, or hold nulls where another does not.
            f.with_nullable(true)
        })
        .collect();
    Ok(Schema::new(fields))
}

/// What the file scans (DataFusion's `DataSourceExec`) of an executed plan read: rows
/// produced, bytes fetched, and row groups read of those their files hold.
pub(super) fn file_scan_statistics(plan: &Arc<dyn ExecutionPlan>) -> Option<Statistics> {
    let mut found = false;
    let mut statistics = Statistics::default();
    let mut pending = vec![plan.clone()];
    while let Some(node) = pending.pop() {
        pending.extend(node.children().into_iter().cloned());
        if node.name() != "DataSourceExec" {
            continue;
        }
        let Some(metrics) = node.metrics() else {
            continue;
        };
        found = true;
        for metric in metrics.aggregate_by_name().iter() {
            match metric.value() {
                MetricValue::OutputRows(count) => statistics.rows_read += count.value() as u64,
                MetricValue::Count { name, count } if name == "bytes_scanned" => {
                    statistics.data_weight_read += count.value() as u64
                }
                MetricValue::PruningMetrics {
                    name,
                    pruning_metrics,
                } if name == "row_groups_pruned_statistics" => {
                    let (read, all) = &mut statistics.scan.row_groups;
                    *read += pruning_metrics.matched();
                    *all += pruning_metrics.matched() + pruning_metrics.pruned();
                }
                MetricValue::PruningMetrics {
                    name,
                    pruning_metrics,
                } if name == "files_ranges_pruned_statistics" => {
                    let (read, all) = &mut statistics.scan.chunks;
                    *read += pruning_metrics.matched();
                    *all += pruning_metrics.matched() + pruning_metrics.pruned();
                }
                _ => {}
            }
        }
    }
    found.then_some(statistics)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(fields: &[(&str, DataType)]) -> SchemaRef {
        Arc::new(Schema::new(
            fields
                .iter()
                .map(|(n, t)| Field::new(*n, t.clone(), false))
                .collect::<Vec<_>>(),
        ))
    }

    fn source(union_by_name: bool) -> FileSource {
        FileSource {
            union_by_name,
            ..FileSource::new("d/*.parquet", FileFormatKind::Parquet)
        }
    }

    #[test]
    fn schemas_combine_by_position_widening_types() {
        let a = schema(&[("id", DataType::Int32), ("v", DataType::Float32)]);
        let b = schema(&[("id", DataType::Int64), ("v", DataType::Float64)]);
        let combined = combine(&source(false), &[("a".into(), a), ("b".into(), b)]).unwrap();
        assert_eq!(combined.field(0).data_type(), &DataType::Int64);
        assert_eq!(combined.field(1).data_type(), &DataType::Float64);
        assert!(combined.field(0).is_nullable());
    }

    #[test]
    fn different_columns_need_union_by_name() {
        let a = schema(&[("id", DataType::Int32), ("name", DataType::Utf8)]);
        let b = schema(&[("id", DataType::Int64), ("extra", DataType::Float64)]);
        let files = [("a".to_string(), a), ("b".to_string(), b)];
        let err = combine(&source(false), &files).unwrap_err().to_string();
        assert!(err.contains("union_by_name"), "{err}");
        let combined = combine(&source(true), &files).unwrap();
        let names: Vec<_> = combined
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        assert_eq!(names, ["id", "name", "extra"]);
        assert_eq!(combined.field(0).data_type(), &DataType::Int64);
        let c = schema(&[("id", DataType::Boolean)]);
        let err = combine(&source(true), &[files[0].clone(), ("c".into(), c)])
            .unwrap_err()
            .to_string();
        assert!(err.contains("do not combine"), "{err}");
    }

    #[test]
    fn exported_string_columns_read_as_text() {
        let field = Field::new("s", DataType::Binary, false)
            .with_metadata([("yt:type".to_string(), "string".to_string())].into());
        let any = Field::new("a", DataType::Binary, false)
            .with_metadata([("yt:type".to_string(), "any".to_string())].into());
        let file = Arc::new(Schema::new(vec![field, any]));
        let combined = combine(&source(false), &[("a".into(), file)]).unwrap();
        assert_eq!(combined.field(0).data_type(), &DataType::Utf8View);
        assert_eq!(combined.field(1).data_type(), &DataType::Binary);
    }
}
