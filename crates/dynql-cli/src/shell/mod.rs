//! `dynql shell`: YT QL queries and every dynql command, one statement at a time.
//!
//! ```text
//! input lines ──> statement::Splitter ──> statement::parse ──┬─ \meta    ──> meta::run
//!   (rustyline on a terminal,                                 ├─ COMMAND  ──> ShellLine (clap)
//!    stdin lines otherwise)                                   │               └─> execute::execute
//!                                                             └─ QUERY    ──> select_stream ──> pretty / plain
//! ```
//!
//! A command is parsed by the same clap [`Command`] enum as the command line and run by the
//! same [`execute::execute`], so the shell and the command line cannot drift apart; its rows
//! are the statement's lines after the command instead of stdin.
//!
//! On a terminal the shell edits lines with rustyline (history file, multi-line statements,
//! Tab completion) and reports errors without exiting; Ctrl-C while a statement runs cancels
//! it and keeps the session. With stdin not a terminal it runs the
//! statements it reads in order, with no prompt, and stops at the first error (exit status 1).

mod complete;
mod interrupt;
mod meta;
mod statement;

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use clap::{CommandFactory, Parser};
use dynql::{Database, SelectOptions};
use rustyline::config::{Behavior, CompletionType, Config};
use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::Editor;

use crate::commands::Command;
use crate::execute::{execute, query_error, query_error_with, select_stream};
use crate::format::{write_result, write_rows, OutputFormat};
use crate::pretty;
use crate::progress::QueryProgressBar;
use complete::{is_complete, Catalog, ShellHelper};
use interrupt::Interrupts;
use statement::{Parsed, Splitter, Statement};

/// A command typed in the shell: the command line without `dynql` and `--store`.
#[derive(Debug, Parser)]
#[command(
    name = "dynql",
    no_binary_name = true,
    disable_version_flag = true,
    about = "The commands of the shell, as on the command line without `dynql` and --store \
             (\\help shows the rest)."
)]
pub struct ShellLine {
    #[command(subcommand)]
    command: Command,
}

/// The names of the commands (`insert-rows`, …, and clap's `help`).
pub fn command_names() -> &'static [String] {
    static NAMES: OnceLock<Vec<String>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let mut names: Vec<String> = ShellLine::command()
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .collect();
        names.push("help".into());
        names
    })
}

/// Whether a statement starting with `word` is a command (else it is a query).
pub fn is_command(word: &str) -> bool {
    command_names().iter().any(|n| n == word)
}

/// How query results print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultFormat {
    /// A drawn table with a row count under it.
    Pretty,
    /// One of the formats of `select-rows --format`.
    Plain(OutputFormat),
}

impl ResultFormat {
    /// The name `\format` takes.
    pub fn name(self) -> &'static str {
        match self {
            ResultFormat::Pretty => "pretty",
            ResultFormat::Plain(format) => format.name(),
        }
    }
}

/// What `\format`, `\timing` and `\set` set, and the session's SQL tables.
#[derive(Debug)]
pub struct Settings {
    /// How query results print.
    pub format: ResultFormat,
    /// Print how long each statement took.
    pub timing: bool,
    /// Confirm setting changes (`format is json`): on a terminal, not in a script's output.
    pub confirm: bool,
    /// Rows a drawn table shows at most (`\maxrows`; 0: all); the rest are counted.
    pub max_rows: usize,
    /// Query options set with `\set`, for the session's queries.
    pub input_row_limit: Option<u64>,
    pub output_row_limit: Option<u64>,
    pub timestamp: Option<dynql::Timestamp>,
    /// Where `sql` statements run: the tables they create last until the shell ends.
    pub sql: dynql::SqlSession,
}

impl Settings {
    fn new(db: &Database, format: ResultFormat, timing: bool, confirm: bool) -> Settings {
        Settings {
            sql: db.sql_session(),
            format,
            timing,
            confirm,
            max_rows: pretty::DEFAULT_MAX_ROWS,
            input_row_limit: None,
            output_row_limit: None,
            timestamp: None,
        }
    }

    /// The options of the session's queries (`\set`), YT's defaults otherwise.
    pub fn select_options(&self) -> SelectOptions {
        let mut options = SelectOptions::default();
        if let Some(n) = self.input_row_limit {
            options.input_row_limit = n;
        }
        if let Some(n) = self.output_row_limit {
            options.output_row_limit = n;
        }
        if let Some(t) = self.timestamp {
            options.timestamp = t;
        }
        options
    }
}

/// Whether the shell goes on after a statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Quit,
}

/// Runs the shell on the open store: interactive when stdin is a terminal, else a script.
/// `new_store`: nothing was written at `url` before (the banner says so: a mistyped store
/// shows at once).
///
/// # Errors
/// In a script, the first failing statement (with its line number); on a terminal, only a
/// terminal that fails.
pub async fn run(db: &Database, url: &str, new_store: bool) -> Result<()> {
    if std::io::stdin().is_terminal() {
        let pretty = std::io::stdout().is_terminal();
        let format = if pretty {
            ResultFormat::Pretty
        } else {
            ResultFormat::Plain(OutputFormat::Yson)
        };
        let settings = Settings::new(db, format, pretty, true);
        interactive(db, url, new_store, settings).await
    } else {
        let settings = Settings::new(db, ResultFormat::Plain(OutputFormat::Yson), false, false);
        script(db, settings).await
    }
}

/// Runs the statements read from stdin in order; stops at the first error or `\q`.
async fn script(db: &Database, mut settings: Settings) -> Result<()> {
    let mut splitter = Splitter::new(is_command);
    for line in std::io::stdin().lock().lines() {
        let line = line.context("reading stdin")?;
        for statement in splitter.push_line(line.trim_end_matches('\r')) {
            if run_in_script(db, &mut settings, &statement).await? == Flow::Quit {
                return Ok(());
            }
        }
    }
    if let Some(statement) = splitter.finish() {
        run_in_script(db, &mut settings, &statement).await?;
    }
    Ok(())
}

async fn run_in_script(db: &Database, settings: &mut Settings, st: &Statement) -> Result<Flow> {
    let mut stdout = crate::output::Stdout;
    let flow = run_statement(db, settings, &st.text, &mut stdout)
        .await
        .with_context(|| format!("line {}", st.line))?;
    stdout.flush()?;
    Ok(flow)
}

/// The history file: `$DYNQL_HISTORY`, else `~/.dynql_history`; none if `DYNQL_HISTORY` is
/// empty or there is no home directory.
fn history_path() -> Option<PathBuf> {
    match std::env::var_os("DYNQL_HISTORY") {
        Some(path) if path.is_empty() => None,
        Some(path) => Some(path.into()),
        None => std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|home| PathBuf::from(home).join(".dynql_history")),
    }
}

/// The prompt of a statement's first line.
const PROMPT: &str = "dynql> ";
/// The prompt of the lines that continue a statement: as wide as [`PROMPT`], so a statement's
/// lines line up.
const CONTINUATION_PROMPT: &str = "   ..> ";

/// The prompt loop on a terminal.
async fn interactive(db: &Database, url: &str, new_store: bool, settings: Settings) -> Result<()> {
    let settings = Arc::new(tokio::sync::Mutex::new(settings));
    let mut interrupts = Interrupts::listen()?;
    let config = Config::builder()
        .completion_type(CompletionType::List)
        .max_history_size(10_000)?
        .history_ignore_dups(true)?
        // Prompts and editing go to the terminal even when stdout is redirected.
        .behavior(Behavior::PreferTerm)
        .build();
    let mut editor: Editor<ShellHelper, FileHistory> = Editor::with_config(config)?;
    editor.set_helper(Some(ShellHelper {
        catalog: Catalog::load(db).await,
        pending: String::new(),
    }));
    let history = history_path();
    if let Some(path) = &history {
        // A missing or unreadable history file only means no history.
        let _ = editor.load_history(path);
    }
    // The banner is for the person at the terminal: stderr keeps it out of redirected results.
    let new = if new_store {
        " (a new store: nothing was written here before)"
    } else {
        ""
    };
    eprintln!(
        "dynql {} on {url}{new}. End statements with ; or an empty line; \\help for help, \\q to quit.",
        env!("CARGO_PKG_VERSION")
    );
    // The statement typed so far: lines are read one at a time, the first after the prompt,
    // the rest after the continuation prompt, until the statement is complete.
    let mut pending = String::new();
    loop {
        let prompt = if pending.is_empty() {
            PROMPT
        } else {
            CONTINUATION_PROMPT
        };
        if let Some(helper) = editor.helper_mut() {
            helper.pending.clone_from(&pending);
        }
        let line = match editor.readline(prompt) {
            Ok(line) => line,
            // Ctrl-C drops the statement being typed, as in a shell.
            Err(ReadlineError::Interrupted) => {
                pending.clear();
                continue;
            }
            Err(ReadlineError::Eof) => return Ok(()),
            Err(e) => return Err(e).context("reading the terminal"),
        };
        if pending.is_empty() && line.trim().is_empty() {
            continue;
        }
        if !pending.is_empty() {
            pending.push('\n');
        }
        pending.push_str(&line);
        if !is_complete(&pending) {
            continue;
        }
        let buffer = std::mem::take(&mut pending);
        // History keeps the statement whole: recalled, it runs as typed.
        let _ = editor.add_history_entry(buffer.as_str());
        if let Some(path) = &history {
            // An unwritable history file is not worth interrupting anyone for.
            let _ = editor.append_history(path);
        }
        let mut splitter = Splitter::new(is_command);
        let mut statements = Vec::new();
        for line in buffer.split('\n') {
            statements.extend(splitter.push_line(line));
        }
        statements.extend(splitter.finish());
        let mut catalog_changed = false;
        for st in statements {
            // Any command may create, move or remove a table.
            catalog_changed |= is_command(statement::command_word(&st.text));
            match run_cancellable(db, &settings, st.text, &mut interrupts).await {
                Some(Ok(Flow::Quit)) => return Ok(()),
                Some(Ok(Flow::Continue)) => {}
                Some(Err(e)) => eprintln!("Error: {}", crate::error_text(&e)),
                None => {
                    // The statements after it on the same input do not run either.
                    eprintln!("Cancelled.");
                    break;
                }
            }
        }
        if catalog_changed {
            let catalog = Catalog::load(db).await;
            if let Some(helper) = editor.helper_mut() {
                helper.catalog = catalog;
            }
        }
    }
}

/// Runs a statement typed at the terminal until it ends or Ctrl-C is pressed (`None`).
///
/// The statement runs in a task of its own and this thread only waits, so a Ctrl-C is acted
/// on at once however long the statement's operators compute between yields: the task is
/// aborted, which drops the query's streams and the tasks DataFusion spawned for it, and
/// the prompt comes back. The settings stay behind a lock the aborted task releases when it
/// stops, so the session (and its SQL tables) lives on.
///
/// An abort takes effect only when the task next yields, and a query computed inline may
/// reach its end first: its output goes through a [`StatementOutput`] that is closed on
/// Ctrl-C, so a cancelled statement never prints, even after the prompt is back.
async fn run_cancellable(
    db: &Database,
    settings: &Arc<tokio::sync::Mutex<Settings>>,
    text: String,
    interrupts: &mut Interrupts,
) -> Option<Result<Flow>> {
    interrupts.mark_seen();
    let db = db.clone();
    let settings = Arc::clone(settings);
    let out = StatementOutput::default();
    let closed = out.open.clone();
    let mut task = tokio::spawn(async move {
        let mut settings = settings.lock().await;
        let mut out = out;
        let result = run_statement(&db, &mut settings, &text, &mut out).await;
        let _ = out.flush();
        result
    });
    tokio::select! {
        joined = &mut task => Some(joined.unwrap_or_else(|e| Err(anyhow!("the statement failed: {e}")))),
        _ = interrupts.pressed() => {
            // Closed before the prompt returns: no byte of this statement follows it.
            *closed.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = false;
            crate::progress::hide_all();
            task.abort();
            None
        }
    }
}

/// Standard output for one statement of the shell, closed when the statement is cancelled.
///
/// The check and the write happen under one lock, so once [`run_cancellable`] has closed it
/// nothing more is written; a write after that fails as interrupted, which ends the
/// statement if it is still running.
#[derive(Clone)]
struct StatementOutput {
    open: Arc<std::sync::Mutex<bool>>,
}

impl Default for StatementOutput {
    fn default() -> Self {
        StatementOutput {
            open: Arc::new(std::sync::Mutex::new(true)),
        }
    }
}

impl StatementOutput {
    fn guarded<T>(
        &self,
        write: impl FnOnce(&mut std::io::Stdout) -> std::io::Result<T>,
    ) -> std::io::Result<T> {
        let open = self
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !*open {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                "the statement was cancelled",
            ));
        }
        write(&mut std::io::stdout())
    }
}

impl Write for StatementOutput {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.guarded(|out| out.write(buf))
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.guarded(|out| out.write_all(buf))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.guarded(|out| out.flush())
    }
}

/// Prints a query result in the shell's format, with its row count and time.
fn show(
    result: &dynql::SelectResult,
    settings: &Settings,
    started: Instant,
    out: &mut (dyn Write + Send),
) -> Result<()> {
    let elapsed = settings.timing.then(|| started.elapsed());
    match settings.format {
        ResultFormat::Pretty => {
            let shown = match settings.max_rows {
                0 => result.rows.len(),
                n => n.min(result.rows.len()),
            };
            writeln!(out, "{}", pretty::result_table(result, shown))?;
            writeln!(
                out,
                "{}",
                pretty::footer_of(result.rows.len(), shown, elapsed, pretty::SHELL_MORE_ROWS)
            )?;
        }
        ResultFormat::Plain(format) => {
            let mut buf = Vec::new();
            write_result(&mut buf, result, format)?;
            out.write_all(&buf)?;
            // Fails, and prints nothing, once the statement is cancelled.
            out.flush()?;
            if let Some(elapsed) = elapsed {
                eprintln!("{}", pretty::footer(result.rows.len(), Some(elapsed)));
            }
        }
    }
    Ok(())
}

/// Runs one statement; results go to `out`, timings of plain-format results to stderr so
/// they stay out of the data.
async fn run_statement(
    db: &Database,
    settings: &mut Settings,
    text: &str,
    out: &mut (dyn Write + Send),
) -> Result<Flow> {
    let parsed = statement::parse(text, is_command)?;
    let started = Instant::now();
    match parsed {
        Parsed::Meta { name, args } if name == "i" => {
            let [file] = &args[..] else {
                bail!("\\i takes one file: \\i FILE");
            };
            return run_file(db, settings, file, out).await;
        }
        Parsed::Meta { name, args } => return meta::run(db, settings, &name, &args, out).await,
        Parsed::Command { words, rows } => {
            let line = match ShellLine::try_parse_from(&words) {
                Ok(line) => line,
                Err(e) if !e.use_stderr() => {
                    // --help and `help COMMAND` print and succeed.
                    write!(out, "{}", e.render())?;
                    return Ok(Flow::Continue);
                }
                Err(e) => {
                    let text = e.render().to_string();
                    return Err(anyhow!(
                        "{}",
                        text.trim_end().strip_prefix("error: ").unwrap_or(&text)
                    ));
                }
            };
            // SQL runs in the shell's SQL session, at the session's timestamp unless given;
            // without --format its results show as queries do (the shell's \format).
            if let crate::commands::Command::Sql(args) = &line.command {
                let mut args = args.clone();
                args.timestamp = args.timestamp.or(settings.timestamp);
                let statements = args.statements(None)?;
                let results =
                    crate::files::sql_results(&mut settings.sql, &args, &statements).await;
                for result in &results.results {
                    match args.format {
                        None => show(result, settings, started, out)?,
                        Some(format) => {
                            let mut buf = Vec::new();
                            write_result(&mut buf, result, format)?;
                            out.write_all(&buf)?;
                        }
                    }
                }
                return results.error.map_or(Ok(Flow::Continue), Err);
            }
            // select-rows without --format shows its rows as queries do (the shell's \format).
            if let crate::commands::Command::SelectRows(args) = &line.command {
                if args.format.is_none() && !args.print_statistics {
                    let mut options = settings.select_options();
                    let bar = crate::progress::watch(&mut options);
                    let (query, stream) = select_stream(db, args, options).await?;
                    show_stream(&query, stream, settings, started, bar, out).await?;
                    return Ok(Flow::Continue);
                }
            }
            execute(db, line.command, &mut rows.as_bytes(), out).await?;
            // Fails, and prints nothing, once the statement is cancelled.
            out.flush()?;
            if settings.timing {
                eprintln!("({})", pretty::duration(started.elapsed()));
            }
        }
        Parsed::Query(query) => {
            let mut options = settings.select_options();
            let bar = crate::progress::watch(&mut options);
            let stream = db.select_stream(&query, &options).await.map_err(|e| {
                let hint = sql_hint(&query, &e);
                query_error_with(&query, e, hint)
            })?;
            show_stream(&query, stream, settings, started, bar, out).await?;
        }
    }
    Ok(Flow::Continue)
}

/// First words of SQL statements (DuckDB's `FROM t` among them). A YT QL query may start
/// with `SELECT` too, so only one that fails to parse is taken for SQL.
const SQL_WORDS: &[&str] = &[
    "select", "with", "from", "values", "create", "insert", "update", "delete", "drop", "copy",
    "show", "describe", "explain",
];

/// The hint for SQL typed as a shell query, which the shell reads as YT QL: a statement
/// that starts as SQL does and does not parse as YT QL.
fn sql_hint(query: &str, e: &dynql::Error) -> Option<&'static str> {
    let syntax = matches!(e.as_query_error(), Some(dynql::ql::Error::Syntax { .. }));
    let first = query
        .trim_start()
        .split(|c: char| !c.is_ascii_alphabetic())
        .next()?
        .to_ascii_lowercase();
    (syntax && SQL_WORDS.contains(&first.as_str())).then_some(
        "the shell reads a statement as YT QL (`* FROM [//t]`); SQL takes the `sql` prefix: `sql SELECT 1 AS x;`",
    )
}

/// Runs the statements of `file` in this session, as a script runs (`\\i FILE`): in order,
/// stopping at the first error, which names the file and line.
async fn run_file(
    db: &Database,
    settings: &mut Settings,
    file: &str,
    out: &mut (dyn Write + Send),
) -> Result<Flow> {
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {file}"))?;
    let mut splitter = Splitter::new(is_command);
    let mut statements = Vec::new();
    for line in text.lines() {
        statements.extend(splitter.push_line(line.trim_end_matches('\r')));
    }
    statements.extend(splitter.finish());
    for st in statements {
        // A file may include another: the recursion is boxed.
        let flow = Box::pin(run_statement(db, settings, &st.text, out))
            .await
            .with_context(|| format!("{file}, line {}", st.line))?;
        if flow == Flow::Quit {
            return Ok(Flow::Quit);
        }
    }
    Ok(Flow::Continue)
}

/// Shows a query's rows in the shell's format: a drawn table once all are in (the progress
/// bar cleared first), plain formats as they are computed (the bar hidden while they are
/// written).
async fn show_stream(
    query: &str,
    mut stream: dynql::SelectStream,
    settings: &Settings,
    started: Instant,
    bar: Option<QueryProgressBar>,
    out: &mut (dyn Write + Send),
) -> Result<()> {
    let ResultFormat::Plain(format) = settings.format else {
        // A table is drawn once its column widths are known.
        let result = stream
            .into_result()
            .await
            .map_err(|e| query_error(query, e))?;
        drop(bar);
        return show(&result, settings, started, out);
    };
    let mut count = 0;
    let mut buf = Vec::new();
    crate::format::write_header(&mut buf, stream.columns(), format)?;
    out.write_all(&buf)?;
    buf.clear();
    while let Some(rows) = stream.next_rows().await {
        let rows = rows.map_err(|e| query_error(query, e))?;
        count += rows.len();
        write_rows(&mut buf, stream.columns(), &rows, format)?;
        crate::progress::suspended(bar.as_ref(), || {
            out.write_all(&buf)?;
            out.flush()
        })?;
        buf.clear();
    }
    drop(bar);
    // Fails, and prints nothing, once the statement is cancelled.
    out.flush()?;
    if settings.timing {
        eprintln!("{}", pretty::footer(count, Some(started.elapsed())));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_commands_and_names_match_the_clap_commands() {
        for name in statement::ROW_COMMANDS {
            assert!(is_command(name), "{name} is not a command");
        }
        for name in ["select-rows", "create", "get", "help"] {
            assert!(is_command(name));
        }
        assert!(!is_command("select"));
    }

    #[test]
    fn shell_lines_parse_like_the_command_line() {
        let line = ShellLine::try_parse_from(["get", "//t/@schema", "--format", "json"]).unwrap();
        assert!(
            matches!(line.command, Command::Get { ref path, format, .. } if path == "//t/@schema" && format == Some(crate::output::TreeFormat::Json))
        );
        assert!(ShellLine::try_parse_from(["nope"]).is_err());
    }
}
