//! Options naming Parquet files as tables (`--table NAME=LOCATION`, `--key [NAME=]COLUMNS`),
//! shared by `select-rows`, `explain-query` and `sql`.

use std::io::Read;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{ArgGroup, Args};
use dynql::{Database, FileTables, SelectResult, SqlOptions, SqlSession, Timestamp};

use crate::format::{write_header, write_result, write_rows, FormatSpec, OutputFormat, Projection};
use crate::output::{rows_output, stdout_is_terminal, yt_format_variable, RowsOutput};
use crate::select_rows::draw_result;

/// `dynql sql`: the statements as an argument (`-`: stdin) or in a file, one of the two.
#[derive(Debug, Clone, Args)]
#[command(group(ArgGroup::new("statements").required(true).args(["query", "file"])))]
pub struct SqlArgs {
    /// SQL statements separated by `;`, e.g. `SELECT host, count(*) FROM "//logs" GROUP BY
    /// host`, or `-` to read them from stdin. Each result prints in turn; `CREATE TABLE … AS
    /// SELECT` makes a table for the statements after it.
    #[arg(allow_hyphen_values = true)]
    pub query: Option<String>,
    /// Read the statements from this file instead.
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// Output format: json, yson, <format=pretty>yson, schemaful_dsv, csv, tsv, … [default:
    /// $YT_FORMAT, else a drawn table on a terminal, else yson; in the shell, its \format].
    #[arg(long, value_parser = crate::format::parse_output_format)]
    pub format: Option<OutputFormat>,
    /// Read dynamic tables at this timestamp (a number, sync_last_committed or
    /// async_last_committed).
    #[arg(long, value_parser = crate::commands::parse_timestamp)]
    pub timestamp: Option<Timestamp>,
    /// Also run statements that write files (`COPY … TO 'file'`, `INSERT INTO` an external
    /// table); without it only reading statements run.
    #[arg(long)]
    pub allow_writes: bool,
    /// Print each statement's execution statistics to stderr (rows read, chunks and row
    /// groups read of the total, as `select-rows --print-statistics` does).
    #[arg(long)]
    pub print_statistics: bool,
    #[command(flatten)]
    pub files: FileArgs,
}

impl SqlArgs {
    /// The statements: the argument, stdin's text for `-` (`stdin` is `None` where stdin is
    /// not the command's own, as in the shell), or the text of `--file`.
    pub fn statements(&self, stdin: Option<&mut (dyn Read + Send)>) -> Result<String> {
        match (&self.query, &self.file, stdin) {
            (Some(q), _, Some(stdin)) if q == "-" => {
                let mut text = String::new();
                stdin
                    .read_to_string(&mut text)
                    .context("reading the SQL statements from stdin")?;
                Ok(text)
            }
            (Some(q), _, None) if q == "-" => bail!(
                "`sql -` reads stdin, which in the shell is the shell's own input: give the statements, or --file PATH"
            ),
            (Some(q), _, _) => Ok(q.clone()),
            (None, Some(path), _) => std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the SQL file {}", path.display())),
            // The argument group requires one of the two.
            (None, None, _) => bail!("sql takes the statements, `-` for stdin, or --file PATH"),
        }
    }
}

/// Runs `dynql sql`: each statement's result in turn, in `--format` (else `YT_FORMAT`), or
/// drawn as a table on a terminal, else YSON. `input` is stdin, read for `sql -`.
pub async fn sql(
    db: &Database,
    args: SqlArgs,
    input: &mut (dyn Read + Send),
    out: &mut (dyn std::io::Write + Send),
) -> Result<()> {
    let given = args.format.map(|format| FormatSpec {
        format,
        columns: None,
    });
    let output = rows_output(given, yt_format_variable().as_deref(), stdout_is_terminal())?;
    let statements = args.statements(Some(input))?;
    let mut session = db.sql_session();
    let results = sql_results(&mut session, &args, &statements).await;
    let mut buf = Vec::new();
    for result in &results.results {
        match &output {
            RowsOutput::Drawn => draw_result(result, result.rows.len(), &mut buf)?,
            RowsOutput::Format(spec) if spec.columns.is_none() => {
                write_result(&mut buf, result, spec.format)?
            }
            // `YT_FORMAT=<columns=[…]>schemaful_dsv`: those columns, in that order.
            RowsOutput::Format(spec) => {
                let projection = Projection::new(spec, &result.columns)?;
                write_header(&mut buf, &projection.columns, spec.format)?;
                let rows = projection.rows(result.rows.clone());
                write_rows(&mut buf, &projection.columns, &rows, spec.format)?;
            }
        }
    }
    out.write_all(&buf)?;
    if args.print_statistics {
        for result in &results.results {
            crate::select_rows::print_statistics(&result.statistics);
        }
    }
    results.error.map_or(Ok(()), Err)
}

/// The results of `statements`, run in `session` with the options of `args`, and the error
/// that stopped them (naming the statement when there were several).
pub async fn sql_results(session: &mut SqlSession, args: &SqlArgs, statements: &str) -> SqlResults {
    let options = match args.files.file_tables() {
        Ok(files) => SqlOptions {
            files,
            timestamp: args.timestamp.unwrap_or(Timestamp::SYNC_LAST_COMMITTED),
            allow_writes: args.allow_writes,
        },
        Err(e) => {
            return SqlResults {
                results: Vec::new(),
                error: Some(e),
            }
        }
    };
    let outcome = session.run(statements, &options).await;
    SqlResults {
        results: outcome.results,
        error: outcome.error.map(|(n, e)| {
            let e = anyhow::Error::from(e);
            if outcome.statements > 1 {
                e.context(format!("statement {n} of {}", outcome.statements))
            } else {
                e
            }
        }),
    }
}

/// What `dynql sql` shows: the results of the statements that ran, then the error that
/// stopped the others.
pub struct SqlResults {
    pub results: Vec<SelectResult>,
    pub error: Option<anyhow::Error>,
}

/// Parquet files to query as tables.
#[derive(Debug, Clone, Default, Args)]
pub struct FileArgs {
    /// Query the Parquet files at LOCATION as the table NAME (repeatable). LOCATION is a
    /// path or glob (`./exports/*.parquet`, a directory), `file:///…` or `s3://bucket/…`.
    /// Without a mapping, `[file:LOCATION]` in a query (`"file:LOCATION"` in SQL) names
    /// files directly.
    #[arg(long = "table", value_name = "NAME=LOCATION")]
    pub tables: Vec<String>,
    /// Key columns of file tables, in order, when the files declare none (or to override
    /// them): `--key id` for every file table, `--key //logs=host,ts` for one (repeatable).
    /// The files must be sorted by it, file after file in path order.
    #[arg(long = "key", value_name = "[NAME=]COLUMNS")]
    pub keys: Vec<String>,
}

impl FileArgs {
    /// The mappings and keys, checked.
    pub fn file_tables(&self) -> Result<FileTables> {
        let mut files = FileTables::default();
        for t in &self.tables {
            let Some((name, location)) = t.split_once('=') else {
                bail!("--table takes NAME=LOCATION, e.g. --table //logs=./exports/*.parquet; got {t:?}");
            };
            if name.is_empty() || location.is_empty() {
                bail!("--table takes NAME=LOCATION with both parts non-empty; got {t:?}");
            }
            if files.tables.iter().any(|(n, _)| n == name) {
                bail!("--table maps {name} twice");
            }
            files.tables.push((name.to_string(), location.to_string()));
        }
        for k in &self.keys {
            let (name, columns) = match k.rsplit_once('=') {
                Some((name, columns)) => (Some(name.to_string()), columns),
                None => (None, k.as_str()),
            };
            let columns: Vec<String> = columns.split(',').map(|c| c.trim().to_string()).collect();
            if columns.iter().any(String::is_empty) {
                bail!("--key takes comma-separated column names, e.g. --key host,ts; got {k:?}");
            }
            if files.keys.iter().any(|(n, _)| *n == name) {
                match &name {
                    Some(n) => bail!("--key is given twice for {n}"),
                    None => bail!("--key without a table name is given twice"),
                }
            }
            files.keys.push((name, columns));
        }
        Ok(files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(tables: &[&str], keys: &[&str]) -> FileArgs {
        FileArgs {
            tables: tables.iter().map(|s| s.to_string()).collect(),
            keys: keys.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn mappings_and_keys_parse_and_mistakes_are_refused() {
        let f = args(&["//logs=./e/*.parquet"], &["id", "//logs=host, ts"])
            .file_tables()
            .unwrap();
        assert_eq!(f.tables, [("//logs".into(), "./e/*.parquet".into())]);
        assert_eq!(f.keys[0], (None, vec!["id".to_string()]));
        assert_eq!(
            f.keys[1],
            (Some("//logs".into()), vec!["host".into(), "ts".into()])
        );
        // A location may hold `=`; the name is what comes before the first one.
        let f = args(&["t=s3://b/k=v/*.parquet"], &[])
            .file_tables()
            .unwrap();
        assert_eq!(f.tables[0].1, "s3://b/k=v/*.parquet");
        assert!(args(&["nolocation"], &[]).file_tables().is_err());
        assert!(args(&["=x"], &[]).file_tables().is_err());
        assert!(args(&["a=x", "a=y"], &[]).file_tables().is_err());
        assert!(args(&[], &["a,,b"]).file_tables().is_err());
        assert!(args(&[], &["a", "b"]).file_tables().is_err());
    }
}
