//! `dynql import` and `dynql export`: the library's [`dynql::io`] with a progress bar on a
//! terminal and a one-line summary on stderr.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use dynql::io::{
    parse_codec, ExportOptions, FileFormat, ImportOptions, Phase, Progress, ProgressFn,
    RejectedRow, DEFAULT_ROWS_PER_FILE,
};
use dynql::{Database, Timestamp};
use indicatif::{HumanBytes, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Input file formats of `import`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportFormat {
    Parquet,
    Csv,
    Json,
}

/// Arguments of `dynql import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The table to load (it must exist), e.g. //home/me/table.
    pub path: String,
    /// Input files: paths, globs ('dump/*.parquet') or file:// URLs, read in this order.
    #[arg(long, required = true, num_args = 1..)]
    pub from: Vec<String>,
    /// Input format of every file (default: from each file's extension: .parquet, .csv,
    /// .jsonl/.json/.ndjson).
    #[arg(long, value_enum)]
    pub format: Option<ImportFormat>,
    /// The file columns to import, comma-separated: `a,b,c` (a subset of the files'
    /// columns, into the table columns of the same names), `dst=src` to read file column src
    /// into table column dst. The other columns of the files are not read (default: every
    /// column; a Parquet or CSV file with a column the table lacks is refused).
    #[arg(long, value_name = "COLUMNS", value_parser = parse_column_list)]
    pub columns: Option<ColumnList>,
    /// Import the valid rows if at most N rows are rejected (default 0: any rejected row
    /// fails the import and nothing is written).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub max_rejected: u64,
    /// Write every rejected row to this file as JSON lines (file, row, line, reason, input).
    #[arg(long, value_name = "PATH")]
    pub rejected_file: Option<PathBuf>,
    /// Memory the key sort of a sorted table holds before it spills sorted runs to temporary
    /// files (in TMPDIR), in MiB.
    #[arg(long, value_name = "MIB", default_value_t = (dynql::io::DEFAULT_SORT_MEMORY >> 20) as u64)]
    pub sort_memory_mib: u64,
}

/// Arguments of `dynql export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The table to export.
    pub path: String,
    /// The directory to write part-00000.parquet, … into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub to: PathBuf,
    /// Export the table as of this timestamp (default: the latest commit).
    #[arg(long, value_parser = crate::commands::parse_timestamp)]
    pub timestamp: Option<Timestamp>,
    /// The most rows per file.
    #[arg(long, default_value_t = DEFAULT_ROWS_PER_FILE, value_name = "N")]
    pub rows_per_file: u64,
    /// Write into a non-empty directory, replacing its part-*.parquet files.
    #[arg(long)]
    pub force: bool,
    /// Write `string` columns as bytes (Arrow Binary, DuckDB BLOB). By default they are
    /// text (Utf8, DuckDB VARCHAR), except a column holding a value that is not UTF-8.
    #[arg(long)]
    pub binary_strings: bool,
    /// The files' compression: zstd, snappy, gzip, lz4, brotli or uncompressed; zstd, gzip
    /// and brotli take a level (`zstd_9`, or --compression-level).
    #[arg(long, default_value = "snappy", value_name = "CODEC")]
    pub compression: String,
    /// The compression level (zstd 1-22, gzip 0-10, brotli 0-11).
    #[arg(long, value_name = "N")]
    pub compression_level: Option<i32>,
}

/// The parsed `--columns` of `import`: `(table column, file column)` pairs.
#[derive(Debug, Clone)]
pub struct ColumnList(pub Vec<(String, String)>);

fn parse_column_list(s: &str) -> Result<ColumnList, String> {
    dynql::io::parse_columns(s).map(ColumnList)
}

/// Runs `dynql import`.
pub async fn import(db: &Database, args: ImportArgs) -> Result<()> {
    let rejected_file = match &args.rejected_file {
        Some(path) => Some(Arc::new(Mutex::new(RejectedFile {
            out: BufWriter::new(
                File::create(path).with_context(|| format!("cannot create {}", path.display()))?,
            ),
            failure: None,
        }))),
        None => None,
    };
    let bar = progress_bar();
    let options = ImportOptions {
        format: args.format.map(|f| match f {
            ImportFormat::Parquet => FileFormat::Parquet,
            ImportFormat::Csv => FileFormat::Csv,
            ImportFormat::Json => FileFormat::Json,
        }),
        max_rejected: args.max_rejected,
        columns: args.columns.map(|c| c.0),
        sort_memory: usize::try_from(args.sort_memory_mib.max(1))
            .unwrap_or(usize::MAX)
            .saturating_mul(1 << 20),
        progress: bar.as_ref().map(import_progress),
        on_rejected: rejected_file.clone().map(|file| {
            Arc::new(move |row: &RejectedRow| {
                if let Ok(mut f) = file.lock() {
                    f.write(row)
                }
            }) as Arc<dyn Fn(&RejectedRow) + Send + Sync>
        }),
    };
    let result = db.import(&args.path, &args.from, &options).await;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    if let (Some(file), Some(path)) = (rejected_file, &args.rejected_file) {
        let mut file = file
            .lock()
            .map_err(|_| anyhow::anyhow!("the rejected-rows writer failed"))?;
        if let Some(e) = file.failure.take() {
            return Err(e).with_context(|| format!("cannot write {}", path.display()));
        }
        file.out
            .flush()
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    let report = match result {
        Ok(report) => report,
        Err(e @ dynql::Error::Rejected { .. }) => {
            bail!("{e}\n(--max-rejected N imports the valid rows when at most N are rejected; --rejected-file PATH lists them all)")
        }
        Err(e) => return Err(e.into()),
    };
    if report.rejected > 0 {
        eprintln!(
            "{} input row{} rejected{}:",
            report.rejected,
            if report.rejected == 1 { "" } else { "s" },
            if report.rejected as usize > report.rejected_examples.len() {
                "; the first ones"
            } else {
                ""
            }
        );
        for r in &report.rejected_examples {
            eprintln!("  {r}");
        }
    }
    eprintln!("{}", report.summary());
    Ok(())
}

/// Runs `dynql export`.
pub async fn export(db: &Database, args: ExportArgs) -> Result<()> {
    let bar = progress_bar();
    let options = ExportOptions {
        timestamp: args.timestamp,
        rows_per_file: args.rows_per_file,
        force: args.force,
        binary_strings: args.binary_strings,
        compression: parse_codec(&args.compression, args.compression_level)
            .map_err(|why| anyhow::anyhow!("--compression: {why}"))?,
        progress: bar.as_ref().map(export_progress),
    };
    let result = db.export(&args.path, &args.to, &options).await;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    eprintln!("{}", result?.summary());
    Ok(())
}

/// The rejected-rows file: every rejected row as a JSON line; the first write error is kept
/// and reported after the import.
struct RejectedFile {
    out: BufWriter<File>,
    failure: Option<std::io::Error>,
}

impl RejectedFile {
    fn write(&mut self, row: &RejectedRow) {
        if self.failure.is_none() {
            if let Err(e) = writeln!(self.out, "{}", row.to_json()) {
                self.failure = Some(e);
            }
        }
    }
}

/// A progress bar on stderr when it is a terminal; `None` when piped (no output at all).
fn progress_bar() -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    Some(ProgressBar::with_draw_target(
        None,
        ProgressDrawTarget::stderr(),
    ))
}

/// A bar style with `{rows_per_sec}`: a whole number of rows per second (indicatif's own
/// `{per_sec}` prints four decimals).
pub(crate) fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .map(|s| {
            s.progress_chars("=> ").with_key(
                "rows_per_sec",
                |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{:.0} rows/s", state.per_sec());
                },
            )
        })
        .unwrap_or_else(|_| ProgressStyle::default_bar())
}

/// Reading is measured in input bytes (their total is known up front), writing in rows.
fn import_progress(bar: &ProgressBar) -> ProgressFn {
    let bar = bar.clone();
    let phase = Mutex::new(None);
    Arc::new(move |p: &Progress| {
        if let Ok(mut current) = phase.lock() {
            if *current != Some(p.phase) {
                *current = Some(p.phase);
                bar.reset();
                bar.set_style(style(match p.phase {
                    Phase::Reading => {
                        "reading [{bar:25}] {bytes}/{total_bytes} {bytes_per_sec}, {msg}, ETA {eta}"
                    }
                    _ => "writing [{bar:25}] {pos}/{len} rows, {rows_per_sec}, ETA {eta}",
                }));
            }
        }
        if let Some(total) = p.total {
            bar.set_length(total);
        }
        match p.phase {
            Phase::Reading => {
                bar.set_position(p.bytes);
                bar.set_message(format!("{} rows", p.rows));
            }
            _ => bar.set_position(p.rows),
        }
    })
}

/// Export is measured in rows against the table's stored row versions (an upper estimate);
/// the message shows the data weight written.
fn export_progress(bar: &ProgressBar) -> ProgressFn {
    let bar = bar.clone();
    bar.set_style(style(
        "exporting [{bar:25}] {pos}/{len} rows, {msg}, {rows_per_sec}, ETA {eta}",
    ));
    Arc::new(move |p: &Progress| {
        if let Some(total) = p.total {
            bar.set_length(total);
        }
        bar.set_position(p.rows);
        bar.set_message(format!("{}", HumanBytes(p.bytes)));
    })
}
