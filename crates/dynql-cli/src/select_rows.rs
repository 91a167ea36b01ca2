//! `select-rows` on the command line: rows as they are computed in the chosen format, or a
//! drawn table of the first ones on a terminal (`crate::output::rows_output`).

use std::io::Write;

use anyhow::Result;
use dynql::{Database, SelectOptions, SelectResult, Yson};

use crate::commands::SelectRowsArgs;
use crate::execute::{query_error, select_stream};
use crate::format::FormatSpec;
use crate::output::{rows_output, stdout_is_terminal, yt_format_variable, RowsOutput};
use crate::pretty;
use crate::progress::{self, QueryProgressBar};

/// Runs `select-rows` and prints its rows (and, with `--print-statistics`, its statistics to
/// stderr).
///
/// # Errors
/// A bad option or format; the query's error, with a caret under its position; a failed
/// write.
pub async fn run(
    db: &Database,
    args: &SelectRowsArgs,
    stdout: &mut (dyn Write + Send),
) -> Result<()> {
    let output = rows_output(
        args.format.clone(),
        yt_format_variable().as_deref(),
        stdout_is_terminal(),
    )?;
    let mut options = SelectOptions::default();
    let bar = progress::watch(&mut options);
    let (query, mut stream) = select_stream(db, args, options).await?;
    match output {
        RowsOutput::Format(format) => {
            print_rows(&query, &mut stream, &format, bar.as_ref(), stdout).await?;
            drop(bar);
        }
        RowsOutput::Drawn => draw_rows(&query, &mut stream, bar, stdout).await?,
    }
    if args.print_statistics {
        print_statistics(&stream.statistics().unwrap_or_default());
    }
    Ok(())
}

/// Prints the rows as they are computed (with the progress bar, if any, hidden while they
/// are written); a query that fails later has printed some and exits with its error.
async fn print_rows(
    query: &str,
    stream: &mut dynql::SelectStream,
    format: &FormatSpec,
    bar: Option<&QueryProgressBar>,
    stdout: &mut (dyn Write + Send),
) -> Result<()> {
    let mut buf = Vec::new();
    let projection = crate::format::Projection::new(format, stream.columns())?;
    crate::format::write_header(&mut buf, &projection.columns, format.format)?;
    stdout.write_all(&buf)?;
    buf.clear();
    while let Some(rows) = stream.next_rows().await {
        let rows = projection.rows(rows.map_err(|e| query_error(query, e))?);
        crate::format::write_rows(&mut buf, &projection.columns, &rows, format.format)?;
        progress::suspended(bar, || {
            stdout.write_all(&buf)?;
            stdout.flush()
        })?;
        buf.clear();
    }
    Ok(())
}

/// Draws the first [`pretty::DEFAULT_MAX_ROWS`] rows as a table and counts the rest (kept
/// out of memory: only the rows shown are held).
async fn draw_rows(
    query: &str,
    stream: &mut dynql::SelectStream,
    bar: Option<QueryProgressBar>,
    stdout: &mut (dyn Write + Send),
) -> Result<()> {
    let mut shown = SelectResult {
        columns: stream.columns().to_vec(),
        rows: Vec::new(),
        statistics: Default::default(),
    };
    let mut count = 0;
    while let Some(rows) = stream.next_rows().await {
        let rows = rows.map_err(|e| query_error(query, e))?;
        count += rows.len();
        let room = pretty::DEFAULT_MAX_ROWS - shown.rows.len();
        shown.rows.extend(rows.into_iter().take(room));
    }
    // The bar is cleared before the table is drawn.
    drop(bar);
    draw_result(&shown, count, stdout)
}

/// Draws `result` (the first rows of `count`) with the row count under it.
pub fn draw_result(
    result: &SelectResult,
    count: usize,
    stdout: &mut (dyn Write + Send),
) -> Result<()> {
    let shown = result.rows.len().min(pretty::DEFAULT_MAX_ROWS);
    writeln!(stdout, "{}", pretty::result_table(result, shown))?;
    writeln!(
        stdout,
        "{}",
        pretty::footer_of(count, shown, None, pretty::COMMAND_MORE_ROWS)
    )?;
    Ok(())
}

/// Prints a query's statistics to stderr, as `yt` prints them: a YSON map (YT's names,
/// then dynql's).
pub(crate) fn print_statistics(s: &dynql::Statistics) {
    let count = |n: u64| Yson::Int64(n as i64);
    let statistics = Yson::Map(
        [
            ("rows_read", count(s.rows_read)),
            ("data_weight_read", count(s.data_weight_read)),
            ("rows_written", count(s.rows_written)),
            ("incomplete_input", Yson::Boolean(s.incomplete_input)),
            ("incomplete_output", Yson::Boolean(s.incomplete_output)),
            ("tablets_read", count(s.scan.tablets.0 as u64)),
            ("tablets", count(s.scan.tablets.1 as u64)),
            ("chunks_read", count(s.scan.chunks.0 as u64)),
            ("chunks", count(s.scan.chunks.1 as u64)),
            ("row_groups_read", count(s.scan.row_groups.0 as u64)),
            ("row_groups", count(s.scan.row_groups.1 as u64)),
            ("rows_decoded", count(s.scan.rows_decoded)),
            (
                "chunks_skipped_by_key_filter",
                count(s.scan.chunks_skipped_by_key_filter),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v))
        .collect(),
    );
    eprintln!("{}", dynql::yson::to_text(&statistics));
}
