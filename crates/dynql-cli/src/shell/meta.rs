//! Meta commands of the shell: `\help`, `\d`, `\timing`, `\format`, `\q`.

use std::io::Write;

use anyhow::{bail, Context, Result};
use clap::CommandFactory;
use dynql::{Database, TableSchema, Yson};

use super::complete::Catalog;
use super::{Flow, ResultFormat, Settings};
use crate::pretty;

/// The meta commands with their arguments and what they do, as `\help` lists them.
const META: &[(&str, &str, &str)] = &[
    (
        "\\d",
        "[PATH]",
        "a table's schema, keys, tablets, rows, chunks (no PATH: list tables)",
    ),
    (
        "\\format",
        "[pretty|json|yson|schemaful_dsv]",
        "how query results print",
    ),
    ("\\timing", "[on|off]", "show how long each statement takes"),
    (
        "\\maxrows",
        "[N]",
        "rows a pretty table shows at most (default 40; 0: all)",
    ),
    (
        "\\set",
        "[NAME VALUE]",
        "a query option for the session: input_row_limit, output_row_limit, timestamp (no arguments: list them)",
    ),
    (
        "\\help",
        "[COMMAND]",
        "this text, or the options of a command",
    ),
    (
        "\\i",
        "FILE",
        "run the statements of a file in this session (stops at its first error)",
    ),
    ("\\q", "", "quit (so does Ctrl-D)"),
];

/// The names `\format` accepts.
pub const FORMATS: &[&str] = &[
    "pretty",
    "json",
    "<encode_utf8=%true>json",
    "yson",
    "<format=pretty>yson",
    "schemaful_dsv",
    "csv",
    "tsv",
];

/// The meta command names, backslash included.
pub fn names() -> impl Iterator<Item = &'static str> {
    META.iter().map(|(name, _, _)| *name)
}

/// Runs meta command `name` (without its backslash).
pub async fn run(
    db: &Database,
    settings: &mut Settings,
    name: &str,
    args: &[String],
    out: &mut (dyn Write + Send),
) -> Result<Flow> {
    match (name, args) {
        ("q" | "quit" | "exit", []) => return Ok(Flow::Quit),
        ("help" | "?", []) => help(out)?,
        ("help" | "?", [command]) => {
            let mut help = super::ShellLine::command();
            match help.find_subcommand_mut(command) {
                Some(sub) => write!(out, "{}", sub.render_help())?,
                None => bail!("no command {command:?}: \\help lists the commands"),
            }
        }
        ("d", []) => {
            for (path, _) in Catalog::load(db).await.tables {
                writeln!(out, "{path}")?;
            }
        }
        ("d", [path]) => describe(db, path, out).await?,
        ("timing", []) => {
            settings.timing = !settings.timing;
            confirm(
                settings,
                out,
                format_args!("timing is {}", on_off(settings.timing)),
            )?;
        }
        ("timing", [value]) => {
            settings.timing = match value.as_str() {
                "on" => true,
                "off" => false,
                other => bail!("\\timing takes on or off, not {other:?}"),
            };
            confirm(
                settings,
                out,
                format_args!("timing is {}", on_off(settings.timing)),
            )?;
        }
        ("format", []) => writeln!(out, "format is {}", settings.format.name())?,
        ("format", [value]) => {
            settings.format = match value.as_str() {
                "pretty" => ResultFormat::Pretty,
                other => {
                    ResultFormat::Plain(crate::format::parse_output_format(other).map_err(|e| {
                        anyhow::anyhow!("\\format takes one of {}: {e}", FORMATS.join(", "))
                    })?)
                }
            };
            confirm(
                settings,
                out,
                format_args!("format is {}", settings.format.name()),
            )?;
        }
        ("maxrows", []) => writeln!(out, "maxrows is {}", settings.max_rows)?,
        ("maxrows", [n]) => {
            settings.max_rows = n
                .parse()
                .map_err(|_| anyhow::anyhow!("\\maxrows takes a number of rows, not {n:?}"))?;
            confirm(
                settings,
                out,
                format_args!("maxrows is {}", settings.max_rows),
            )?;
        }
        ("set", []) => {
            let show = |v: Option<String>| v.unwrap_or_else(|| "default".into());
            writeln!(
                out,
                "input_row_limit {}\noutput_row_limit {}\ntimestamp {}",
                show(settings.input_row_limit.map(|n| n.to_string())),
                show(settings.output_row_limit.map(|n| n.to_string())),
                show(settings.timestamp.map(|t| t.to_string())),
            )?;
        }
        ("set", [option, value]) => {
            let unset = value == "default";
            let number = || {
                value.parse::<u64>().map_err(|_| {
                    anyhow::anyhow!(
                        "\\set {option} takes a number of rows or default, not {value:?}"
                    )
                })
            };
            match option.as_str() {
                "input_row_limit" => {
                    settings.input_row_limit = if unset { None } else { Some(number()?) }
                }
                "output_row_limit" => {
                    settings.output_row_limit = if unset { None } else { Some(number()?) }
                }
                "timestamp" => {
                    settings.timestamp = if unset {
                        None
                    } else {
                        Some(
                            crate::commands::parse_timestamp(value)
                                .map_err(|e| anyhow::anyhow!(e))?,
                        )
                    }
                }
                other => bail!(
                    "\\set takes input_row_limit, output_row_limit or timestamp, not {other:?}"
                ),
            }
            confirm(settings, out, format_args!("{option} is {value}"))?;
        }
        (
            "q" | "quit" | "exit" | "help" | "?" | "d" | "timing" | "format" | "maxrows" | "set",
            _,
        ) => {
            bail!("too many arguments to \\{name}: \\help shows its usage")
        }
        _ => bail!("unknown command \\{name}: \\help lists the commands"),
    }
    Ok(Flow::Continue)
}

/// Tells what a setting is now, unless the shell runs a script.
fn confirm(
    settings: &Settings,
    out: &mut (dyn Write + Send),
    message: std::fmt::Arguments,
) -> Result<()> {
    if settings.confirm {
        writeln!(out, "{message}")?;
    }
    Ok(())
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

fn help(out: &mut (dyn Write + Send)) -> Result<()> {
    writeln!(
        out,
        "A statement ends with ;, an empty line or a \\ command line. It is one of:
  QUERY            a YT QL query, run as select-rows:  * from [//t] where k = 1;
  COMMAND ARGS     a dynql command, as on the command line:  get //t/@schema;
                   insert-rows, delete-rows, lookup-rows, lock-rows and write-table read their rows
                   from the lines that follow, up to an empty line
  \\COMMAND         one of these, ended by the end of its line:"
    )?;
    let usages: Vec<String> = META
        .iter()
        .map(|(name, args, _)| format!("{name} {args}"))
        .collect();
    let width = usages.iter().map(String::len).max().unwrap_or(0);
    for (usage, (_, _, what)) in usages.iter().zip(META) {
        writeln!(out, "    {usage:<width$}  {what}")?;
    }
    // The command names, wrapped to fit a narrow terminal.
    let mut line = String::from("Commands:");
    for name in super::command_names() {
        if line.len() + 1 + name.len() > 90 {
            writeln!(out, "{line}")?;
            line = " ".repeat("Commands:".len());
        }
        line.push(' ');
        line.push_str(name);
    }
    writeln!(out, "{line}")?;
    writeln!(
        out,
        "(`COMMAND --help` or `\\help COMMAND` shows a command's options.)
Tab completes commands, options, table paths, columns and functions."
    )?;
    Ok(())
}

/// `\d PATH`: what `get PATH/@` says about a table, for a person.
async fn describe(db: &Database, path: &str, out: &mut (dyn Write + Send)) -> Result<()> {
    let attributes = db.get_attribute(path, None).await?;
    let get = |name: &str| {
        attributes
            .get(name)
            .with_context(|| format!("{path} has no attribute {name:?}"))
    };
    let schema = TableSchema::from_yson(get("schema")?)?;
    let kind = if schema.is_sorted() {
        "sorted"
    } else {
        "ordered"
    };
    let dynamic = if get("dynamic")? == &Yson::Boolean(true) {
        "dynamic"
    } else {
        "static"
    };
    let state = text(get("tablet_state")?);
    writeln!(out, "{path}: {kind} {dynamic} table, {state}")?;
    writeln!(out, "{}", pretty::schema_table(&schema))?;
    if schema.is_sorted() {
        let keys: Vec<&str> = schema
            .key_columns()
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        writeln!(out, "key columns: {}", keys.join(", "))?;
    }
    let tablets = match get("tablets")? {
        Yson::List(items) => items.as_slice(),
        _ => &[],
    };
    writeln!(out, "tablets: {}", tablets.len())?;
    // A table may have thousands of tablets; the first ones tell the shape.
    const SHOWN: usize = 16;
    for t in tablets.iter().take(SHOWN) {
        let index = t.get("index").map(text).unwrap_or_default();
        match t.get("pivot_key") {
            Some(pivot) => writeln!(out, "  {index:>4}  pivot key {}", text(pivot))?,
            None => writeln!(
                out,
                "  {index:>4}  {} rows, {} trimmed",
                t.get("row_count").map(text).unwrap_or_default(),
                t.get("trimmed_row_count").map(text).unwrap_or_default(),
            )?,
        }
    }
    if tablets.len() > SHOWN {
        writeln!(out, "  … {} more", tablets.len() - SHOWN)?;
    }
    writeln!(
        out,
        "rows: {}, chunks: {}, data weight: {}",
        text(get("row_count")?),
        text(get("chunk_count")?),
        text(get("data_weight")?),
    )?;
    Ok(())
}

/// A scalar attribute as bare text (`mounted`, not `"mounted"`); anything else as YSON.
fn text(v: &Yson) -> String {
    match v {
        Yson::String(s) => String::from_utf8_lossy(s).into_owned(),
        Yson::Int64(n) => n.to_string(),
        Yson::Uint64(n) => n.to_string(),
        other => dynql::yson::to_text(other),
    }
}
