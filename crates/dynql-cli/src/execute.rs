//! Running commands: the command line opens its store and runs one command; the shell runs
//! the same [`execute`] for each statement.

use std::io::{Read, Write};

use anyhow::{bail, Context, Result};
use dynql::{
    CacheAdmission, Database, LockMode, LookupOptions, SelectOptions, Timestamp, WriteOptions, Yson,
};

use crate::commands::{Cli, Command, InputFormat, SelectRowsArgs};
use crate::format::input_format;
use crate::output::{stdout_is_terminal, tree_format, TreeFormat};
use crate::row_input::{read_rows, special_doubles};

/// Decoded row groups a single command keeps: the lookups of a join read the same row groups
/// batch after batch; a scan reads each once, and the cache lets in only what is read twice
/// (`CacheAdmission::SecondRead`), so a full scan's memory is not held for nothing.
const ONE_COMMAND_CACHE_BYTES: usize = 16 << 20;

/// The shell keeps what it decodes for the statements after (the store's default).
const SHELL_CACHE_BYTES: usize = 2 << 30;

/// Runs the command line: opens the store, then runs one command on stdin and stdout, or the
/// shell.
pub async fn run(cli: Cli) -> Result<()> {
    let url = crate::store::store_url(&cli);
    crate::store::check_proxy(&cli, &url)?;
    crate::store::check_local_dir(&url)?;
    let options = crate::store::store_options(&cli)?;
    match cli.command {
        Command::Shell => {
            let new_store = !Database::was_written(&url);
            let created = crate::store::NewDirectories::of(&url);
            let db = match cli.memory_limit {
                None => Database::open_with(&url, options)?,
                Some(limit) => crate::store::limited(
                    &url,
                    &options,
                    SHELL_CACHE_BYTES,
                    CacheAdmission::FirstRead,
                    limit,
                )?,
            };
            let ran = crate::shell::run(&db, &url, new_store).await;
            // A shell that wrote nothing leaves no directory behind.
            created.remove_if_empty();
            ran
        }
        command => {
            // One command reads each row group about once: keep little of what it decodes,
            // so a full scan's memory is what it streams, not the table.
            let reads_only = crate::store::reads_only(&command);
            // Queries over files alone need no store: no note for them (one that names a
            // table fails, and its error names the store searched).
            let quiet = matches!(
                command,
                Command::Sql(_) | Command::SelectRows(_) | Command::ExplainQuery { .. }
            );
            let new_store = !reads_only && !Database::was_written(&url);
            let created = crate::store::NewDirectories::of(&url);
            let store = crate::store::open(
                &url,
                &options,
                reads_only,
                ONE_COMMAND_CACHE_BYTES,
                cli.memory_limit,
                quiet,
            )?;
            // Unlocked handles: their locks are not Send, and a command's future may move
            // between the runtime's threads.
            let mut stdin = std::io::stdin();
            let mut stdout = crate::output::Stdout;
            let ran = execute(&store.db, command, &mut stdin, &mut stdout).await;
            ran.map_err(|e| {
                // A command that failed on a store it would have created leaves nothing on
                // disk, and says that there was no store (a mistyped --store shows at once).
                created.remove_if_empty();
                if new_store {
                    anyhow::anyhow!(
                        "{e:#} (no dynql store existed at {url}: nothing was written there yet)"
                    )
                } else {
                    store.name_store_in(e)
                }
            })
        }
    }
}

/// Runs one command against an open store: rows (insert-rows, delete-rows, lookup-rows,
/// lock-rows) come from `input`, results go to `stdout`. The command line passes its stdin and
/// stdout; the shell passes the lines after the command and the terminal, so both run the same
/// code.
///
/// # Errors
/// Whatever the command fails with; query errors carry the query with a caret under the error
/// position.
pub async fn execute(
    db: &Database,
    command: Command,
    input: &mut (dyn Read + Send),
    stdout: &mut (dyn Write + Send),
) -> Result<()> {
    // The tablet state commands differ only in what they ask of the tablets.
    let tablet_command = match &command {
        Command::UnmountTable { .. } => dynql::TabletCommand::Unmount,
        Command::RemountTable { .. } => dynql::TabletCommand::Remount,
        Command::FreezeTable { .. } => dynql::TabletCommand::Freeze,
        Command::UnfreezeTable { .. } => dynql::TabletCommand::Unfreeze,
        _ => dynql::TabletCommand::Mount,
    };
    let command_is_copy = matches!(command, Command::Copy(_));
    match command {
        Command::Create {
            type_and_path,
            type_option,
            attributes,
            recursive,
            ignore_existing,
            tx,
        } => {
            let (node_type, path) = match (type_option, &type_and_path[..]) {
                (Some(t), [path]) => (t, path.clone()),
                (None, [t, path]) => (t.clone(), path.clone()),
                (Some(_), _) => bail!("create --type TYPE takes the path alone"),
                (None, _) => bail!("create takes a node type and a path: create table PATH"),
            };
            let attributes = attributes
                .map(|text| {
                    dynql::parse_document(&text).context("--attributes must be a YSON or JSON map")
                })
                .transpose()?;
            if node_type == "table" && attributes.is_none() {
                bail!("--attributes with dynamic=%true and a schema is required");
            }
            let options = dynql::CreateOptions {
                recursive,
                ignore_existing,
                transaction: tx,
            };
            let tx = options.transaction.clone();
            db.create(&node_type, &path, attributes.as_ref(), options)
                .await?;
            // yt prints the id of the node created (or, with --ignore-existing, found).
            let id = db
                .get_attribute_in(&path, Some("id"), tx.as_deref())
                .await?;
            match id.as_str() {
                Some(id) => writeln!(stdout, "{id}")?,
                None => writeln!(stdout, "{}", dynql::yson::to_text(&id))?,
            }
        }
        Command::InsertRows {
            path,
            format,
            update,
            aggregate,
            tx,
            ..
        } => {
            let rows = read_rows(db, &path, input_format(format)?, input).await?;
            let options = WriteOptions { update, aggregate };
            match tx {
                Some(id) => {
                    db.transaction(&id)
                        .await?
                        .insert_rows(&path, &rows, options)
                        .await?
                }
                None => {
                    db.insert_rows_with(&path, &rows, options).await?;
                }
            }
        }
        Command::WriteTable {
            path,
            format,
            append,
            tx,
        } => {
            let format = input_format(format)?;
            let options = dynql::WriteTableOptions {
                append,
                transaction: tx,
            };
            // A part of the input at a time: a large write is never held whole.
            let mut writer = db.start_write_table(&path, options).await?;
            let mut rows = crate::row_input::RowStream::new(format, input);
            while let Some(mut part) = rows.next_part()? {
                if matches!(format, InputFormat::Json | InputFormat::JsonBytes) {
                    special_doubles(writer.schema(), &mut part);
                }
                writer.write(&part).await?;
            }
            writer.commit().await?;
        }
        Command::ReadTable { path, format, tx } => {
            let format = crate::format::select_format(format)?;
            let options = dynql::ReadTableOptions { transaction: tx };
            let read = db.read_table(&path, options).await?;
            let projection = crate::format::Projection::new(&format, &read.columns)?;
            let mut buf = Vec::new();
            crate::format::write_header(&mut buf, &projection.columns, format.format)?;
            let rows = projection.rows(read.rows);
            crate::format::write_rows(&mut buf, &projection.columns, &rows, format.format)?;
            stdout.write_all(&buf)?;
        }
        Command::LockRows {
            path,
            format,
            lock_type,
            locks,
            tx,
        } => {
            let mode = LockMode::parse(&lock_type).with_context(|| {
                format!("--lock-type must be exclusive, shared_weak or shared_strong, not {lock_type:?}")
            })?;
            let keys = read_rows(db, &path, input_format(format)?, input).await?;
            db.transaction(&tx)
                .await?
                .lock_rows(&path, &keys, mode, locks)
                .await?;
        }
        Command::StartTx {
            timeout,
            tx_type,
            parent,
            title,
            attributes,
        } => {
            let id =
                crate::tree::start_tx(db, timeout, &tx_type, parent, title, attributes).await?;
            writeln!(stdout, "{id}")?;
        }
        Command::PingTx { id } => db.ping_transaction(&id).await?,
        Command::CommitTx { id } => {
            // A tablet transaction prints its commit timestamp; a master one nothing.
            if let Some(ts) = db.commit_transaction(&id).await? {
                writeln!(stdout, "{ts}")?;
            }
        }
        Command::AbortTx { id } => db.abort_transaction(&id).await?,
        Command::Lock {
            path,
            tx,
            mode,
            child_key,
            attribute_key,
            waitable,
        } => {
            let options = dynql::LockOptions {
                child_key,
                attribute_key,
                waitable,
            };
            let taken = db.lock(&path, &tx, &mode, options).await?;
            writeln!(stdout, "{}", taken.lock_id)?;
        }
        Command::Unlock { path, tx } => db.unlock(&path, &tx).await?,
        Command::LookupRows {
            path,
            format,
            column_names,
            column_name,
            versioned,
            keep_missing_rows,
            use_lookup_cache,
            print_statistics,
            timestamp,
            tx,
        } => {
            if versioned {
                bail!("--versioned lookups (every version of a row with its timestamps) are not supported by dynql; read at a --timestamp instead");
            }
            let format = input_format(format)?;
            let keys = read_rows(db, &path, format, input).await?;
            let column_names = match column_names {
                None if !column_name.is_empty() => Some(column_name),
                None => None,
                Some(text) if text.trim_start().starts_with('[') => {
                    let list = dynql::parse_document(&text)?;
                    match list {
                        Yson::List(items) => Some(
                            items
                                .iter()
                                .map(|i| {
                                    i.as_str()
                                        .map(str::to_string)
                                        .context("--column-names must list strings")
                                })
                                .collect::<Result<Vec<_>>>()?,
                        ),
                        _ => bail!("--column-names must be a list"),
                    }
                }
                Some(text) => Some(text.split(',').map(|s| s.trim().to_string()).collect()),
            };
            let options = LookupOptions {
                timestamp: timestamp.unwrap_or(Timestamp::SYNC_LAST_COMMITTED),
                column_names,
                keep_missing_rows,
                use_lookup_cache,
            };
            let result = match tx {
                Some(id) => {
                    db.transaction(&id)
                        .await?
                        .lookup_rows(&path, &keys, &options)
                        .await?
                }
                None => db.lookup_rows(&path, &keys, &options).await?,
            };
            let mut buf = Vec::new();
            crate::format::write_lookup(&mut buf, &result, format)?;
            stdout.write_all(&buf)?;
            if print_statistics {
                let s = result.statistics;
                eprintln!(
                    "{{\"rows_looked_up\"={};\"cache_hits\"={};\"cache_misses\"={};\"chunks_skipped_by_key_filter\"={};}}",
                    s.rows_looked_up, s.cache_hits, s.cache_misses, s.chunks_skipped_by_key_filter
                );
            }
        }
        Command::Compact { path } => {
            let tablets = db.store().table(&path).await?.tablet_count;
            let (before, after) = db.compact(&path).await?;
            eprintln!("compacted {path}: {before} row versions -> {after}");
            let now = db.store().table(&path).await?.tablet_count;
            if now != tablets {
                eprintln!("{path}: {tablets} tablets -> {now} (auto_partitioning_by_size)");
            }
        }
        Command::GenerateTimestamp => {
            writeln!(stdout, "{}", db.generate_timestamp().await?)?;
        }
        Command::DeleteRows {
            path, format, tx, ..
        } => {
            let rows = read_rows(db, &path, input_format(format)?, input).await?;
            match tx {
                Some(id) => db.transaction(&id).await?.delete_rows(&path, &rows).await?,
                None => db.delete_rows(&path, &rows).await?,
            }
        }
        Command::SelectRows(args) => crate::select_rows::run(db, &args, stdout).await?,
        Command::ExplainQuery {
            query,
            analyze,
            format,
            range_expansion_limit,
            allow_full_scan,
            placeholder_values,
            timestamp,
            run,
            files,
        } => {
            let mut options = SelectOptions {
                files: files.file_tables()?,
                ..SelectOptions::default()
            };
            run.apply(&mut options);
            if let Some(v) = range_expansion_limit {
                options.range_expansion_limit = v;
            }
            if let Some(v) = allow_full_scan {
                options.allow_full_scan = v;
            }
            if let Some(t) = timestamp {
                options.timestamp = t;
            }
            if let Some(text) = placeholder_values {
                options.placeholder_values = Some(
                    dynql::parse_document(&text)
                        .context("--placeholder-values must be a YSON or JSON map")?,
                );
            }
            let explanation = if analyze {
                db.explain_analyze_query(&query, &options).await
            } else {
                db.explain_query(&query, &options).await
            }
            .map_err(|e| query_error(&query, e))?;
            // Scripts have always read JSON from a pipe; a person gets pretty YSON.
            let format = tree_format(format, stdout_is_terminal(), TreeFormat::Json);
            let value = Yson::from_json(&explanation.to_json());
            crate::output::write_tree(stdout, &value, format)?;
        }
        Command::ReshardTable {
            path,
            pivot_keys,
            tablet_count,
            uniform,
            first_tablet_index,
            last_tablet_index,
            trimmed_row_counts,
            sync: _,
            enable_slicing,
        } => {
            let queue_options = first_tablet_index.is_some()
                || last_tablet_index.is_some()
                || !trimmed_row_counts.is_empty();
            let reshard = match (pivot_keys.is_empty(), tablet_count) {
                (false, None) => {
                    let mut list = Vec::new();
                    for p in &pivot_keys {
                        list.push(dynql::parse_document(p).with_context(|| {
                            format!("pivot key {p:?} must be a YSON list such as [] or [10; foo]")
                        })?);
                    }
                    dynql::Reshard::Pivots(dynql::parse_pivot_keys(&Yson::List(list))?)
                }
                (true, Some(count)) if queue_options => dynql::Reshard::Queues {
                    tablet_count: count,
                    first: first_tablet_index,
                    last: last_tablet_index,
                    trimmed_row_counts,
                },
                (true, Some(count)) if enable_slicing && !uniform => {
                    dynql::Reshard::Sliced { count }
                }
                (true, Some(count)) => dynql::Reshard::TabletCount { count, uniform },
                (false, Some(_)) => bail!("give either pivot keys or --tablet-count, not both"),
                (true, None) => bail!("give pivot keys or --tablet-count"),
            };
            if uniform && tablet_count.is_none() {
                bail!("--uniform needs --tablet-count");
            }
            if enable_slicing && (uniform || tablet_count.is_none()) {
                bail!("--enable-slicing picks the pivots of --tablet-count N from the chunks' statistics: give --tablet-count without --uniform");
            }
            db.reshard_table(&path, reshard).await?;
        }
        Command::AlterTable {
            path,
            schema,
            dynamic,
        } => {
            let schema = schema
                .map(|text| {
                    dynql::parse_document(&text).context("--schema must be a YSON or JSON list")
                })
                .transpose()?;
            db.alter_table(&path, schema.as_ref(), dynamic).await?;
        }
        Command::MountTable { path, .. }
        | Command::UnmountTable { path, .. }
        | Command::RemountTable { path, .. }
        | Command::FreezeTable { path, .. }
        | Command::UnfreezeTable { path, .. } => db.set_tablet_state(&path, tablet_command).await?,
        Command::TrimRows {
            path,
            tablet_index,
            trimmed_row_count,
        } => db.trim_rows(&path, tablet_index, trimmed_row_count).await?,
        Command::Set {
            path,
            value,
            recursive,
            tx,
        } => {
            let value = match value {
                Some(v) => v,
                None => {
                    let mut text = String::new();
                    input
                        .read_to_string(&mut text)
                        .context("reading the value from stdin")?;
                    text.trim().to_string()
                }
            };
            // YSON or JSON; text that is neither (a bare word such as strong, or an
            // expression such as Interval("P1D") ON at) is a string.
            let value = dynql::parse_value_or_string(&value)?;
            let tx = tx.as_deref();
            match path.split_once("/@") {
                Some((node, attribute)) => {
                    db.set_attribute_in(node, attribute, Some(&value), tx)
                        .await?
                }
                None => db.set_in(&path, &value, recursive, tx).await?,
            }
        }
        Command::Get {
            path,
            format,
            attributes,
            tx,
        } => {
            let value = crate::tree::get(db, &path, &attributes, tx.as_deref()).await?;
            let format = tree_format(format, stdout_is_terminal(), TreeFormat::Yson);
            crate::output::write_tree(stdout, &value, format)?;
        }
        Command::Copy(args) | Command::Move(args) => {
            let options = dynql::CopyOptions {
                recursive: args.recursive,
                force: args.force,
                transaction: args.tx,
            };
            let (source, destination) = (&args.source, &args.destination);
            match command_is_copy {
                true => db.copy_node(source, destination, options).await?,
                false => db.move_node(source, destination, options).await?,
            }
        }
        Command::Remove {
            path,
            force,
            recursive,
            tx,
        } => {
            let tx = tx.as_deref();
            if let Some((node, attribute)) = path.split_once("/@") {
                return Ok(db.set_attribute_in(node, attribute, None, tx).await?);
            }
            db.remove_node(&path, recursive, force, tx).await?;
        }
        Command::Sql(args) => crate::files::sql(db, args, input, stdout).await?,
        Command::Import(args) => crate::io::import(db, args).await?,
        Command::Export(args) => crate::io::export(db, args).await?,
        Command::Exists { path, tx } => {
            writeln!(stdout, "{}", db.exists_in(&path, tx.as_deref()).await?)?;
        }
        Command::List {
            path,
            format,
            long_format,
            attributes,
            tx,
        } => {
            let tx = tx.as_deref();
            let Some(format) = format else {
                if !attributes.is_empty() {
                    eprintln!("warning: --attribute is ignored without --format (as in yt)");
                }
                if long_format {
                    for entry in crate::tree::list_long(db, &path, tx).await? {
                        writeln!(stdout, "{}", entry.line())?;
                    }
                    return Ok(());
                }
                for name in db.list_in(&path, tx).await? {
                    writeln!(stdout, "{name}")?;
                }
                return Ok(());
            };
            let list = crate::tree::list(db, &path, &attributes, tx).await?;
            crate::output::write_tree(stdout, &list, format)?;
        }
        Command::Check(args) => {
            let report = if args.repair {
                let repaired = db.repair(&args.accept_loss).await?;
                for line in &repaired.repaired {
                    writeln!(stdout, "repaired: {line}")?;
                }
                if repaired.repaired.is_empty() {
                    writeln!(stdout, "nothing to repair without losing data")?;
                }
                repaired.check
            } else {
                db.check().await?
            };
            let plural =
                |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
            writeln!(
                stdout,
                "checked {}, {} and {} ({} bytes)",
                plural(report.tables, "table"),
                plural(report.chunks, "chunk"),
                plural(report.key_filters, "key filter"),
                report.bytes
            )?;
            for d in &report.damage {
                let tables = if d.tables.is_empty() {
                    "no existing table".to_string()
                } else {
                    d.tables.join(", ")
                };
                writeln!(
                    stdout,
                    "damaged: {}: {} (affects {tables})",
                    d.file, d.problem
                )?;
            }
            if !report.is_ok() {
                stdout.flush()?;
                bail!(
                    "{} damaged item(s) found; see the README, \"Recovering from damage\"",
                    report.damage.len()
                );
            }
            writeln!(stdout, "no damage found")?;
        }
        Command::Shell => bail!("the shell is already running"),
    }
    stdout.flush()?;
    Ok(())
}

/// A `select-rows`' query and its rows as they are computed: the command's options over
/// `base` (the shell's `\\set` ones, or YT's defaults).
///
/// # Errors
/// No query; a bad option; the query's error, with a caret under its position.
pub async fn select_stream(
    db: &Database,
    args: &SelectRowsArgs,
    base: SelectOptions,
) -> Result<(String, dynql::SelectStream)> {
    let query = args
        .query
        .clone()
        .or_else(|| args.query_option.clone())
        .context("select-rows needs a query")?;
    let mut options = base;
    if let Some(v) = args.range_expansion_limit {
        options.range_expansion_limit = v;
    }
    if let Some(v) = args.allow_full_scan {
        options.allow_full_scan = v;
    }
    if let Some(t) = args.timestamp {
        options.timestamp = t;
    }
    args.run.apply(&mut options);
    options.files = args.files.file_tables()?;
    if let Some(text) = &args.placeholder_values {
        options.placeholder_values = Some(
            dynql::parse_document(text)
                .context("--placeholder-values must be a YSON or JSON map")?,
        );
    }
    let stream = match &args.tx {
        Some(id) => match db.transaction(id).await {
            Ok(t) => t.select_stream(&query, &options).await,
            Err(e) => Err(e),
        },
        None => db.select_stream(&query, &options).await,
    };
    let stream = stream.map_err(|e| query_error(&query, e))?;
    Ok((query, stream))
}

/// Adds the query line that holds the error position, with a caret under it, and the
/// error's hint under that.
pub fn query_error(query: &str, e: dynql::Error) -> anyhow::Error {
    query_error_with(query, e, None)
}

/// [`query_error`] with a hint of the caller's for an error that has none of its own.
pub fn query_error_with(query: &str, e: dynql::Error, hint: Option<&str>) -> anyhow::Error {
    if e.kind() == dynql::ErrorKind::LimitExceeded {
        // YT's message, then how to raise the limit it names.
        let which = if e.to_string().contains("excessive input") {
            "input"
        } else {
            "output"
        };
        return anyhow::anyhow!(
            "{e}\nhint: the {which} row limit is 1000000 rows unless set, as in YT: raise it with --{which}-row-limit N (in the shell, \\set {which}_row_limit N), or pass --fail-on-incomplete-result false for the rows up to it"
        );
    }
    let caret = e.query_span().and_then(|span| caret_lines(query, span));
    let hint = e.query_hint().or(hint);
    if caret.is_none() && hint.is_none() {
        // The error itself, its causes kept.
        return e.into();
    }
    let mut text = e.to_string();
    if let Some(lines) = caret {
        text = format!("{text}\n{lines}");
    }
    if let Some(hint) = hint {
        text = format!("{text}\nhint: {hint}");
    }
    anyhow::anyhow!(text)
}

/// The line of `query` that holds `span.start` and a caret line under the span (cut at the
/// end of that line), both indented by two spaces; `None` if the span is outside the query.
/// Tabs stay tabs in the caret line so the caret lines up however the terminal expands them.
pub fn caret_lines(query: &str, span: dynql::ql::Span) -> Option<String> {
    if span.start > query.len() || !query.is_char_boundary(span.start) {
        return None;
    }
    let line_start = query[..span.start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = query[span.start..]
        .find('\n')
        .map_or(query.len(), |i| span.start + i);
    // A window of the line around the position: a long query (tens of KB on one line) must
    // not come back whole in its error.
    let before: Vec<char> = query[line_start..span.start].chars().collect();
    let after: Vec<char> = query[span.start..line_end].chars().collect();
    let shown_before = &before[before.len().saturating_sub(CARET_CONTEXT)..];
    let shown_after = &after[..after.len().min(CARET_CONTEXT)];
    let mut line = String::new();
    if shown_before.len() < before.len() {
        line.push('…');
    }
    line.extend(shown_before);
    let indent: String = line
        .chars()
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    line.extend(shown_after);
    if shown_after.len() < after.len() {
        line.push('…');
    }
    let width = query
        .get(span.start..span.end.clamp(span.start, line_end))
        .map_or(1, |s| s.chars().count())
        .clamp(1, shown_after.len().max(1));
    Some(format!("  {line}\n  {indent}{}", "^".repeat(width)))
}

/// Characters of the query line shown on each side of an error's position.
const CARET_CONTEXT: usize = 60;

#[cfg(test)]
mod tests {
    use super::*;
    use dynql::ql::Span;

    #[test]
    fn carets_point_into_the_line_that_holds_the_position() {
        assert_eq!(
            caret_lines("k from [//t] limit", Span::new(13, 18)).as_deref(),
            Some("  k from [//t] limit\n               ^^^^^")
        );
        // Multi-line: the second line, the span cut at its end; tabs kept for alignment.
        assert_eq!(
            caret_lines("k from [//t]\n\twhere k = = 1\nlimit 1", Span::new(24, 40)).as_deref(),
            Some("  \twhere k = = 1\n  \t          ^^^")
        );
        assert_eq!(caret_lines("k", Span::new(5, 6)), None);
        // A 60 KB query shows a window around the position.
        let long = format!("k from [//t] where {} = = 1", "k + ".repeat(15_000));
        let at = long.find("= =").unwrap() + 2;
        let lines = caret_lines(&long, Span::new(at, at + 1)).unwrap();
        assert!(lines.len() < 300, "{} bytes", lines.len());
        let (text, carets) = lines.split_once('\n').unwrap();
        assert!(text.starts_with("  …") && text.ends_with("= = 1"), "{text}");
        assert_eq!(text.chars().nth(carets.chars().count() - 1), Some('='));
    }
}
