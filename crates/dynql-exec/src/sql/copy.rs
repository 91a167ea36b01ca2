//! `COPY … TO 'result.parquet'`: a query's result written as a Parquet file.
//!
//! DataFusion writes Parquet only with its Parquet feature, which brings a second set of
//! compression codecs into the build; dynql's own Parquet writer (the one chunks and exports
//! use) writes the file instead. The file appears whole or not at all: it is written under a
//! temporary name beside the target and renamed when complete.

use std::fs::File;
use std::path::{Path, PathBuf};

use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::sql::parser::{CopyToSource, CopyToStatement, Statement as SqlStatement};
use futures::StreamExt;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use crate::error::{Error, Result};

/// A `COPY` whose target is Parquet: the query to run and where its rows go.
pub(super) struct ParquetCopy {
    /// The rows to write, as a statement of their own.
    pub(super) source: SqlStatement,
    target: PathBuf,
    properties: WriterProperties,
}

/// `statement` as a Parquet copy, if it is a `COPY` to Parquet (`STORED AS PARQUET`, or a
/// target ending in `.parquet`); an error if it asks for what this writer cannot do.
pub(super) fn parquet_copy(statement: &SqlStatement) -> Option<Result<ParquetCopy>> {
    let SqlStatement::CopyTo(copy) = statement else {
        return None;
    };
    // DuckDB's spelling is an option: `(FORMAT parquet, COMPRESSION zstd)`.
    let format_option = copy
        .options
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case("format"))
        .map(|(_, value)| value.to_string().trim_matches('\'').to_string());
    let parquet = match copy.stored_as.as_ref().or(format_option.as_ref()) {
        Some(format) => format.eq_ignore_ascii_case("parquet"),
        None => copy.target.to_ascii_lowercase().ends_with(".parquet"),
    };
    parquet.then(|| prepare(copy))
}

fn invalid(message: String) -> Error {
    Error::Query(dynql_ql::Error::invalid_query(message))
}

fn prepare(copy: &CopyToStatement) -> Result<ParquetCopy> {
    if !copy.partitioned_by.is_empty() {
        return Err(invalid(
            "COPY … TO Parquet writes one file: PARTITIONED BY is not supported".to_string(),
        ));
    }
    let target = match copy.target.strip_prefix("file://") {
        Some(path) => path,
        None if copy.target.contains("://") => {
            return Err(invalid(format!(
                "COPY … TO Parquet writes local files; {} is not one",
                copy.target
            )))
        }
        None => copy.target.as_str(),
    };
    if target.ends_with('/') || Path::new(target).is_dir() {
        return Err(invalid(format!(
            "COPY … TO Parquet writes one file; {target} is a directory: name the file (…/result.parquet)"
        )));
    }
    let mut properties = WriterProperties::builder().set_compression(Compression::SNAPPY);
    let (mut codec, mut level) = (None, None);
    for (key, value) in &copy.options {
        let key = key.to_ascii_lowercase();
        let value = value.to_string();
        let value = value.trim_matches('\'');
        match key.strip_prefix("format.").unwrap_or(&key) {
            // Parquet, or this copy would not be here.
            "format" => {}
            "compression" => codec = Some(value.to_string()),
            "compression_level" => {
                level = Some(value.parse::<i32>().map_err(|_| {
                    invalid(format!("compression_level takes a number, not {value}"))
                })?)
            }
            "max_row_group_size" => {
                let rows = value.parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| {
                    invalid(format!(
                        "max_row_group_size takes a positive number of rows, not {value}"
                    ))
                })?;
                properties = properties.set_max_row_group_row_count(Some(rows));
            }
            other => {
                return Err(invalid(format!(
                    "COPY … TO Parquet takes the options format, compression, compression_level and max_row_group_size, not {other}"
                )))
            }
        }
    }
    // DuckDB's spelling: COMPRESSION 'zstd', COMPRESSION_LEVEL 9 (a level alone is zstd's).
    if codec.is_some() || level.is_some() {
        let name = codec.as_deref().unwrap_or("zstd");
        let compression = dynql_storage::codec::parse_codec(name, level)
            .map_err(|why| invalid(format!("COPY … TO Parquet: {why}")))?;
        properties = properties.set_compression(compression);
    }
    let source = match &copy.source {
        CopyToSource::Query(query) => SqlStatement::Statement(Box::new(
            datafusion::sql::sqlparser::ast::Statement::Query(query.clone()),
        )),
        CopyToSource::Relation(name) => {
            let sql = format!("SELECT * FROM {name}");
            let mut statements = datafusion::sql::parser::DFParser::parse_sql(&sql)?;
            statements
                .pop_front()
                .ok_or_else(|| invalid(format!("COPY cannot read {name}")))?
        }
    };
    Ok(ParquetCopy {
        source,
        target: PathBuf::from(target),
        properties: properties.build(),
    })
}

impl ParquetCopy {
    /// Writes the rows of `stream` to the target file; returns how many there were.
    pub(super) async fn write(self, mut stream: SendableRecordBatchStream) -> Result<u64> {
        let name = self
            .target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let temp = self
            .target
            .with_file_name(format!(".{name}.tmp-{}", std::process::id()));
        let written = write_file(&temp, stream.schema(), self.properties, &mut stream).await;
        let renamed = written.and_then(|rows| {
            std::fs::rename(&temp, &self.target)
                .map(|_| rows)
                .map_err(|e| file_error(&self.target, e))
        });
        if renamed.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        renamed
    }
}

async fn write_file(
    path: &Path,
    schema: arrow::datatypes::SchemaRef,
    properties: WriterProperties,
    stream: &mut SendableRecordBatchStream,
) -> Result<u64> {
    let file = File::create(path).map_err(|e| file_error(path, e))?;
    let mut writer =
        ArrowWriter::try_new(file, schema, Some(properties)).map_err(|e| file_error(path, e))?;
    let mut rows = 0;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        rows += batch.num_rows() as u64;
        writer.write(&batch).map_err(|e| file_error(path, e))?;
    }
    writer.close().map_err(|e| file_error(path, e))?;
    Ok(rows)
}

fn file_error(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Storage(dynql_storage::Error::Invalid(format!(
        "cannot write {}: {e}",
        path.display()
    )))
}

/// `sql` with DuckDB's option list of `COPY … TO 'target' (FORMAT parquet, …)` spelled as
/// DataFusion's `OPTIONS (…)`; `None` when there is no such list.
pub(super) fn with_options_keyword(sql: &str) -> Option<String> {
    static COPY_TO: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = COPY_TO.get_or_init(|| {
        regex::Regex::new(r"(?is)(\bCOPY\b.*?\bTO\s+'(?:[^']|'')*'\s*)\(")
            .expect("a valid regular expression")
    });
    re.is_match(sql)
        .then(|| re.replace_all(sql, "${1}OPTIONS (").into_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn duckdb_copy_options_get_the_options_keyword() {
        assert_eq!(
            super::with_options_keyword("copy (select 1) to 'a.parquet' (FORMAT parquet)").unwrap(),
            "copy (select 1) to 'a.parquet' OPTIONS (FORMAT parquet)"
        );
        assert!(super::with_options_keyword("SELECT 1").is_none());
    }
}
